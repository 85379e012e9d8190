source .gpu/setup.sh
mkdir -p /tmp/old /tmp/new && tar -x -C /tmp/old -f .gpu/old.tar && tar -x -C /tmp/new -f .gpu/head.tar
for r in 1 2; do
  (cd /tmp/old && PYTHONPATH=/tmp/site:/tmp/old timeout 200 python3 $OLDPWD/.gpu/colab.py old$r) 2>&1 | grep GB/s
  (cd /tmp/new && PYTHONPATH=/tmp/site:/tmp/new timeout 200 python3 $OLDPWD/.gpu/colab.py new$r) 2>&1 | grep GB/s
done
