/**
 * Loaded with `--import` into a gateway process under test: measures the longest stretch the main thread
 * kept the event loop from turning. A 1 ms timer notes the main thread's CPU time between its ticks, so time
 * the operating system gave to other processes (the machine is shared) does not count, only work of ours.
 * On SIGUSR2 it writes `loop-probe {"maxBlockMs":…}` to stdout and starts a new measurement.
 */
const cpuMs = (): number => {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1000;
};

let lastCpu = cpuMs();
let lastWall = performance.now();
let maxBlockMs = 0;
let ticks = 0;
const timer = setInterval(() => {
  const cpu = cpuMs();
  const wall = performance.now();
  maxBlockMs = Math.max(maxBlockMs, Math.min(cpu - lastCpu, wall - lastWall));
  lastCpu = cpu;
  lastWall = wall;
  ticks++;
}, 1);
timer.unref();

process.on('SIGUSR2', () => {
  process.stdout.write(`loop-probe ${JSON.stringify({ maxBlockMs, ticks })}\n`);
  maxBlockMs = 0;
  ticks = 0;
});
