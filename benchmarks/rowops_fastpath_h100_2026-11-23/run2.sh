#!/bin/bash
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/src"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site whl/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD
timeout 100 python3 -m pytest -q -rfE -p no:cacheprovider -n 8 tests/test_fastpath_rows.py tests/test_fastpath.py > $OUT/tests_fastpath.txt 2>&1
echo "rc $?" >> $OUT/tests_fastpath.txt
tail -25 $OUT/tests_fastpath.txt
