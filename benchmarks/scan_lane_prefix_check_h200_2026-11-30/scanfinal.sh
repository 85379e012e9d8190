source .gpu/setup.sh
mkdir -p /tmp/old /tmp/new && tar -x -C /tmp/old -f .gpu/old.tar && tar -x -C /tmp/new -f .gpu/head.tar
for r in 1 2; do
(cd /tmp/old && PYTHONPATH=/tmp/site:/tmp/old timeout 60 python3 $OLDPWD/.gpu/scanab.py before) 2>&1 | grep -v Warn
(cd /tmp/new && PYTHONPATH=/tmp/site:/tmp/new timeout 60 python3 $OLDPWD/.gpu/scanab.py after) 2>&1 | grep -v Warn
done
cd /tmp/new && PYTHONPATH=/tmp/site:/tmp/new timeout 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_cuda_rowops.py -k "scan or cumsum or cumprod or past" 2>&1 | tail -2
