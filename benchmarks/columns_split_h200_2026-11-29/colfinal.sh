source .gpu/setup.sh
mkdir -p /tmp/old /tmp/new && tar -x -C /tmp/old -f .gpu/old.tar && tar -x -C /tmp/new -f .gpu/head.tar
(cd /tmp/old && PYTHONPATH=/tmp/site:/tmp/old timeout 190 python3 $OLDPWD/.gpu/colab.py before) 2>&1 | grep GB/s
(cd /tmp/new && PYTHONPATH=/tmp/site:/tmp/new timeout 190 python3 $OLDPWD/.gpu/colab.py after) 2>&1 | grep GB/s
#bash .gpu/final4.sh 2>&1 | tail -4
