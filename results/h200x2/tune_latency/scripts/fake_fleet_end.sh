# The end of a fleet run without a GPU (nineteenth session): two fake workers on ResNet-50, this
# machine (2 cores), run as: bash fake_fleet_end.sh NAME CODE_DIR, alternating the code (new old old new).
# $1 name, $2 code dir
d=/tmp/fr_$1; rm -rf $d; mkdir -p $d; cd $2
AUTOCONV_BACKEND=fake AUTOCONV_FAKE_DEVICES=1 PYTHONPATH=$2 timeout 600 /work/main/.venv/bin/python -m autoconv tune examples/resnet50.yaml --workers-per-gpu 2 --trials 20 --storage $d/s.journal --cache $d/c.sqlite3 > $d/log 2>&1
python3 -c "
import json;d=json.load(open('$2/results/resnet50/tune.json'));print('$1', round(d['wall_s'],2), [(w['milestones_s']['last_result'], w['milestones_s']['tuned']) for w in d['workers']], sum(p['trials_run'] for p in d['problems']))"
