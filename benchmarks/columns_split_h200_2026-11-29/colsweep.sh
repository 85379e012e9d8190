source .gpu/setup.sh
mkdir -p /tmp/new && tar -x -C /tmp/new -f .gpu/head.tar
cd /tmp/new && PYTHONPATH=/tmp/site:/tmp/new timeout 500 python3 $OLDPWD/.gpu/colsweep.py ${OPS:-sum,max} 2>&1 | grep -v Warn
