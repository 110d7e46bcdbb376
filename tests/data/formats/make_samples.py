#!/usr/bin/env python3
"""Writes the format samples of tests/data/formats/ from one real H200 run
(tests/data/h200/resnet50_224_bs256_bf16.smi.csv, 100 ms, with its .host.csv and .truth.json),
each in the exact shape its tool writes (sources in tests/data/README.md). GPU 1 is an idle
second GPU (constant values), so every reader must pick GPU 0, the busy one. Run from this folder."""
import csv, datetime, gzip, json, zoneinfo

H200 = "../h200/resnet50_224_bs256_bf16"
rows = []
with open(H200 + ".smi.csv") as f:
    r = csv.reader(f, skipinitialspace=True)
    head = [h.split(" [")[0] for h in next(r)]
    for line in r:
        rows.append({k: (v if k in ("timestamp", "name") else v.split(" ")[0]) for k, v in zip(head, line)})
host = {}
with open(H200 + ".host.csv") as f:
    for line in csv.DictReader(f):
        host[line["timestamp"]] = line
truth = json.load(open(H200 + ".truth.json"))
# The smi log's local wall time; the run was logged on a UTC machine.
def unix(stamp):
    return datetime.datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
for x in rows:
    x["t"] = unix(x["timestamp"])
UUID = ["GPU-5f3e2b1a-7c44-4d2e-9a0b-1c2d3e4f5a6b", "GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"]
IDLE = {"utilization.gpu": "0", "utilization.memory": "0", "power.draw": "72.13", "clocks.current.sm": "345",
        "clocks.current.memory": "3201", "clocks.current.graphics": "345", "temperature.gpu": "31",
        "memory.used": "505", "memory.free": "143266", "memory.total": "143771"}
def val(g, x, k):
    return x[k] if g == 0 else IDLE[k]

# ---- dcgm-exporter /metrics (dcgm-exporter 3.x default-counters.csv subset, label set as it writes it),
# appended by `while :; do date +%s.%N; curl -s localhost:9400/metrics; sleep 0.1; done >> scrapes.txt`,
# rotated and gzipped by logrotate: scrapes.metrics.txt.gz
EXPORTER = [("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM frequency (in MHz).", "clocks.current.sm"),
            ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory frequency (in MHz).", "clocks.current.memory"),
            ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", "temperature.gpu"),
            ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "power.draw"),
            ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", None),
            ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "utilization.gpu"),
            ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", "utilization.memory"),
            ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", "memory.free"),
            ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", "memory.used")]
def labels(g, braces=True, sep=","):
    s = sep.join([f'gpu="{g}"', f'UUID="{UUID[g]}"', f'pci_bus_id="00000000:{0x18 + g:02X}:00.0"',
                  f'device="nvidia{g}"', 'modelName="NVIDIA H200"', 'Hostname="trainer-7"',
                  'DCGM_FI_DRIVER_VERSION="580.65.06"'])
    return "{" + s + "}" if braces else s
out = []
for x in rows:
    out.append(f"{x['t']:.9f}")
    for name, typ, help_, key in EXPORTER:
        out.append(f"# HELP {name} {help_}")
        out.append(f"# TYPE {name} {typ}")
        for g in (0, 1):
            out.append(f"{name}{labels(g)} {val(g, x, key) if key else 0}")
with gzip.GzipFile("scrapes.metrics.txt.gz", "wb", mtime=0) as f:
    f.write(("\n".join(out) + "\n").encode())

# ---- query_range JSON (Prometheus HTTP API v1) saved with curl: one line, values as strings
res = []
for name, typ, help_, key in EXPORTER:
    if not key:
        continue
    for g in (0, 1):
        m = {"__name__": name, "DCGM_FI_DRIVER_VERSION": "580.65.06", "Hostname": "trainer-7", "UUID": UUID[g],
             "device": f"nvidia{g}", "gpu": str(g), "instance": "trainer-7:9400", "job": "dcgm",
             "modelName": "NVIDIA H200", "pci_bus_id": f"00000000:{0x18 + g:02X}:00.0"}
        res.append({"metric": m, "values": [[round(x["t"], 3), val(g, x, key)] for x in rows]})
open("query_range.json", "w").write(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": res}},
                                               separators=(",", ":")))

# ---- wide DCGM_FI_* CSV: a scrape log flattened with pandas (DataFrame.to_csv(index=False)), one row per GPU
cols = ["timestamp", "gpu", "UUID", "modelName"] + [n for n, _, _, k in EXPORTER if k]
lines = [",".join(cols)]
for x in rows:
    ts = datetime.datetime.fromtimestamp(x["t"], datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    for g in (0, 1):
        lines.append(",".join([ts, str(g), UUID[g], "NVIDIA H200"] + [val(g, x, k) for n, _, _, k in EXPORTER if k]))
open("wide.dcgm.csv", "w").write("\n".join(lines) + "\n")

# ---- Grafana 10 panel > Inspect > Data > Download CSV ("Series joined by time", "Formatted data" on):
# quoted display names (the series' labels), times local to the browser, units from the panel, CRLF
def q(s):
    return '"' + s.replace('"', '""') + '"'
series = [("DCGM_FI_DEV_GPU_UTIL", "utilization.gpu", "%"), ("DCGM_FI_DEV_POWER_USAGE", "power.draw", " W"),
          ("DCGM_FI_DEV_SM_CLOCK", "clocks.current.sm", " MHz")]
names = [f"{n}{labels(g, sep=', ')}" for n, _, _ in series for g in (0, 1)]
lines = [",".join([q("Time")] + [q(n) for n in names])]
for x in rows:
    t = datetime.datetime.fromtimestamp(x["t"], datetime.timezone.utc)
    stamp = t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"
    lines.append(",".join([stamp] + [val(g, x, k) + u for _, k, u in series for g in (0, 1)]))
open("grafana.csv", "w", newline="").write("\r\n".join(lines) + "\r\n")

# ---- W&B: api.run(...).history(stream="events", samples=…) to_csv(index=False) (system metrics; the
# job's own `epoch` from its history merged on _timestamp, as `pd.merge_asof` gives it)
epoch_ends = [unix(e["end_stamp"]) for e in truth["epochs"]]
epoch_starts = [unix(e["start_stamp"]) for e in truth["epochs"]]
def epoch_at(t):
    if t < epoch_starts[0]:
        return ""
    return str(sum(1 for e in epoch_ends if e <= t))
keys = ["system.gpu.0.gpu", "system.gpu.0.memory", "system.gpu.0.memoryAllocated", "system.gpu.0.temp",
        "system.gpu.0.powerWatts", "system.gpu.0.powerPercent", "system.gpu.0.smClock", "system.gpu.0.memoryClock",
        "system.gpu.1.gpu", "system.gpu.1.powerWatts", "system.cpu", "system.memory", "system.proc.memory.rssMB",
        "_runtime", "_timestamp", "_wandb", "epoch"]
lines = [",".join(keys)]
t0 = rows[0]["t"]
for x in rows:
    h = host.get(x["timestamp"])
    cpu = h["cpu_util_pct"] if h else ""
    lines.append(",".join([x["utilization.gpu"], x["utilization.memory"], f"{100 * float(x['memory.used']) / float(x['memory.total']):.4f}",
                           x["temperature.gpu"], x["power.draw"], f"{float(x['power.draw']) / 7:.4f}", x["clocks.current.sm"],
                           x["clocks.current.memory"], "0", "72.13", cpu, "12.5", "2841.2", f"{x['t'] - t0 + 2.1:.4f}",
                           f"{x['t']:.6f}", "true", epoch_at(x["t"])]))
open("wandb_system.csv", "w").write("\n".join(lines) + "\n")

# ---- MLflow: MlflowClient().get_metric_history(run_id, key) for every key, concatenated into a DataFrame
# of mlflow.entities.Metric fields, to_csv(index=False): key,value,timestamp(ms),step. System metrics
# (mlflow.system_metrics) share one timestamp per sampling round; the job logs `epoch` at each epoch end.
lines = ["key,value,timestamp,step"]
sysm = [("system/gpu_0_utilization_percentage", lambda x: x["utilization.gpu"]),
        ("system/gpu_0_memory_usage_percentage", lambda x: f"{100 * float(x['memory.used']) / float(x['memory.total']):.4f}"),
        ("system/gpu_0_memory_usage_megabytes", lambda x: f"{float(x['memory.used']) * 1.048576:.1f}"),
        ("system/gpu_0_power_usage_watts", lambda x: x["power.draw"]),
        ("system/gpu_0_power_usage_percentage", lambda x: f"{float(x['power.draw']) / 7:.4f}"),
        ("system/cpu_utilization_percentage", lambda x: host[x["timestamp"]]["cpu_util_pct"] if x["timestamp"] in host else None)]
for key, f in sysm:
    for i, x in enumerate(rows):
        v = f(x)
        if v is not None:
            lines.append(f"{key},{v},{round(x['t'] * 1000)},{i}")
for i, e in enumerate(epoch_ends):
    lines.append(f"epoch,{i},{round(e * 1000)},{i}")
    lines.append(f"val_loss,{round(2.0 / (i + 1), 4)},{round(e * 1000)},{i}")
open("mlflow_history.csv", "w").write("\n".join(lines) + "\n")

# ---- nvidia-smi dmon (driver 580 columns; `-d` is whole seconds, so these are 1 s samples: the real
# run's rows 0, 10, 20, …). dmon prints its two header lines again every screenful (here every 20 rows).
sec = rows[::10]
def dmon_line(prefix, x, g, extra):
    p = round(float(val(g, x, "power.draw")))
    u, m = int(val(g, x, "utilization.gpu")), int(val(g, x, "utilization.memory"))
    return (f"{prefix}    {g}  {p:5d}  {int(val(g, x, 'temperature.gpu')):5d}      -  {u:5d}  {m:5d}      0      0      0      0"
            f"  {int(val(g, x, 'clocks.current.memory')):5d}  {int(val(g, x, 'clocks.current.graphics')):5d}{extra(g, x)}")
h1 = "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk"
h2 = "# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz"
lines = []
for i, x in enumerate(sec):
    if i % 20 == 0:
        lines += [h1, h2]
    for g in (0, 1):
        lines.append(dmon_line("", x, g, lambda g, x: ""))
open("two_gpus.smi-dmon.log", "w").write("\n".join(lines) + "\n")
h1 = "#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk     fb   bar1   ccpm"
h2 = "#YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %      %      %      %      %    MHz    MHz     MB     MB     MB"
lines = []
for i, x in enumerate(sec):
    if i % 20 == 0:
        lines += [h1, h2]
    t = datetime.datetime.fromtimestamp(x["t"], datetime.timezone.utc)
    lines.append(dmon_line(f" {t:%Y%m%d}   {t:%H:%M:%S}  ", x, 0, lambda g, x: f"  {int(x['memory.used']):5d}      2      0"))
open("pucm_dt.smi-dmon.log", "w").write("\n".join(lines) + "\n")

# ---- nvidia-smi pmon (refused: per-process)
open("pmon.log", "w").write("""# gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command 
# Idx           #    C/G      %      %      %      %      %      %    name 
    0      41234     C     93     37      -      -      -      -    python         
    0      41234     C     95     38      -      -      -      -    python         
""")
