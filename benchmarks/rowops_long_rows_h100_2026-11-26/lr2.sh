source .gpu/setup.sh
timeout 280 python3 .gpu/longrows.py "4096x65536|-|lanes=1024,wg_size=1024|lanes=512,wg_size=512;64x4194304|-|cache=none,split=36|cache=none,split=72|cache=none,split=36,lanes=1024,wg_size=1024|cache=none,split=18,lanes=1024,wg_size=1024;1x268435456|-|cache=none,lanes=1024,wg_size=1024" softmax,rms_norm,layer_norm float16,float32 2>&1 | grep -v Warn
