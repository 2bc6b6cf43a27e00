#!/bin/bash
# Preprocessed size of what the templates #include (nvcc 13.0; nvcc force-includes cuda_runtime.h,
# NVRTC does not: NVRTC's own prelude lives in libnvrtc-builtins and is not visible to -E).
cd "$(dirname "$0")/pp"
for f in empty pipeline; do
  nvcc -arch=sm_90a -std=c++17 -E -x cu $f.cu -o $f.ii 2>/dev/null
  nvcc -arch=sm_90a -std=c++17 -E -x cu $f.cu --cuda-device-only 2>/dev/null > /dev/null
  echo "$f.cu  nvcc -E: $(wc -c < $f.ii) bytes, $(wc -l < $f.ii) lines, $(grep -c '^# 1 "' $f.ii) files entered"
done
echo "headers cuda_pipeline.h adds over nvcc's implicit set:"
nvcc -arch=sm_90a -std=c++17 -M -x cu empty.cu 2>/dev/null | tr ' \\' '\n\n' | grep -v '^$' | sort -u > empty.deps
nvcc -arch=sm_90a -std=c++17 -M -x cu pipeline.cu 2>/dev/null | tr ' \\' '\n\n' | grep -v '^$' | sort -u > pipeline.deps
comm -13 empty.deps pipeline.deps | grep -v '\.cu$\|\.o:$\|:$' | while read h; do echo "  $h $(wc -c < $h)"; done
