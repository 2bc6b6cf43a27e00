# The tuner's own work, without a GPU: VGG-16 (batch 8) with a ResNet-50 history made by the fake
# backend and --transfer, in one process, old and new tree alternated, wall and CPU time.
#   bash fake_transfer_ab.sh OLD_TREE NEW_TREE HISTORY_DIR CONFIG
# (HISTORY_DIR: s.journal and c.sqlite3 of `AUTOCONV_BACKEND=fake autoconv tune` of ResNet-50 at
# batch 32; CONFIG: examples/vgg16.yaml with a `results:` folder of its own.)
set -u
old=$1 new=$2 history=$3 config=$(realpath $4)
for round in 1 2 3; do for tree in $old $new; do
  work=$(mktemp -d); cp $history/s.journal $history/c.sqlite3 $work/
  (cd $tree && /usr/bin/time -f "$tree round $round: %e s wall, %U s user, %S s sys" env AUTOCONV_BACKEND=fake \
    python -m autoconv tune $config --storage $work/s.journal --cache $work/c.sqlite3 --transfer 2>&1 >/dev/null | tail -1)
  rm -rf $work
done; done
