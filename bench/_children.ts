// Every process the bench starts (servers, wrk) is tracked here, so that none outlives the bench:
// they are stopped at the end, on a signal, and killed on any way out of the process.
import type { ChildProcess } from 'node:child_process';

const children = new Set<ChildProcess>();

/** Tracks a child until it exits. */
export function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

// Last resort: whatever path leads out of this process, no child outlives it.
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/** SIGTERM to every live child (SIGKILL after 5 s); resolves once all have exited. */
export async function stopChildren(): Promise<void> {
  await Promise.all(
    [...children].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
          child.once('exit', () => {
            clearTimeout(force);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}
