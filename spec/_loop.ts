// Test helper: how long the event loop of this process was held while some work ran.
import { performance } from 'node:perf_hooks';

/**
 * Runs `work` and measures the longest the event loop was held meanwhile: between two ticks of a
 * 1 ms timer, the lesser of the time that passed and the CPU time the process used, so that time
 * the machine gave to other processes does not count. `ticks` says the timer did run.
 */
export async function loopHeld<T>(work: () => Promise<T>): Promise<{ value: T; heldMs: number; ticks: number }> {
  let heldMs = 0;
  let ticks = 0;
  let wall = performance.now();
  let cpu = process.cpuUsage();
  const tick = () => {
    const nowWall = performance.now();
    const nowCpu = process.cpuUsage();
    const cpuMs = (nowCpu.user - cpu.user + nowCpu.system - cpu.system) / 1000;
    heldMs = Math.max(heldMs, Math.min(nowWall - wall, cpuMs));
    wall = nowWall;
    cpu = nowCpu;
    ticks++;
  };
  const timer = setInterval(tick, 1);
  try {
    const value = await work();
    // The stretch since the last tick.
    tick();
    return { value, heldMs, ticks: ticks - 1 };
  } finally {
    clearInterval(timer);
  }
}
