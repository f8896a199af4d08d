"""What partly sent requests cost a broker (issue 26, perf/RESULTS.md
"Hostile clients and request memory"): start BIN's broker (one shard, a
temp log dir), open N connections that each declare a 100 MB request and
send 64 KiB of it, wait until the broker's receive queues are empty
(/proc/net/tcp), and print its RSS growth in all and per connection.

  python3 perf/partial_requests.py BIN N
"""
import socket, subprocess, sys, time, os, tempfile, struct
def rss(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"): return int(l.split()[1])
def unread(port):
    n=0; q=0
    for l in open("/proc/net/tcp").readlines()[1:]:
        f=l.split()
        if f[1].endswith(":%04X"%port) and f[3]=="01":
            n+=1; q+=int(f[4].split(":")[1],16)
    return n,q
binary=sys.argv[1]; conns=int(sys.argv[2])
d=tempfile.mkdtemp()
s=socket.socket(); s.bind(("127.0.0.1",0)); port=s.getsockname()[1]; s.close()
p=subprocess.Popen([binary,"broker","--override",f"listeners=PLAINTEXT://127.0.0.1:{port}","--override",f"log.dirs={d}","--override","shardlog.shards=1"],stderr=subprocess.PIPE,stdout=subprocess.DEVNULL)
for line in p.stderr:
    if b"listening on" in line: break
time.sleep(1)
base=rss(p.pid)
frame=struct.pack(">i",100_000_000)+b"\0\0\0\x09"+b"x"*(64*1024-4)
held=[]
for i in range(conns):
    c=socket.create_connection(("127.0.0.1",port)); c.sendall(frame); held.append(c)
while True:
    n,q=unread(port)
    if n>=conns and q==0: break
    time.sleep(0.05)
time.sleep(0.5)
after=rss(p.pid)
print(f"{os.path.basename(binary)}: {conns} connections x (100 MB declared, 64 KiB sent): RSS +{after-base} KiB = {(after-base)//conns} KiB per connection")
p.terminate(); p.wait()
