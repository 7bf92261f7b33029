// What a V8 CPU profile (node --cpu-prof) says of where a process's time went: the share of its
// busy time (every sample but idle) spent under frames of some files, and in garbage collection.
// A share is a ratio of samples taken in the same process over the same run, so a machine busy
// elsewhere slows both parts alike, where CPU time per request moves with the load around it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface _Node {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

interface _Profile {
  nodes: _Node[];
  samples: number[];
  timeDeltas: number[];
}

/** Busy milliseconds, and the shares of them under frames whose file matches `files` and in the garbage collector. */
export interface ProfileShares {
  busyMs: number;
  under: number;
  gc: number;
}

/** The profile `node --cpu-prof --cpu-prof-dir dir` wrote for process `pid`, or `null`. */
export function profileOf(dir: string, pid: number): string | null {
  const name = readdirSync(dir).find((n) => n.endsWith('.cpuprofile') && n.split('.').includes(String(pid)));
  return name === undefined ? null : join(dir, name);
}

/** How the busy time recorded in `file` splits: under frames of files matching `files`, in GC, the rest. */
export function profileShares(file: string, files: RegExp): ProfileShares {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as _Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  // Whether a node or any frame above it is in the files, worked out once per node.
  const inFiles = new Map<number, boolean>();
  const within = (id: number): boolean => {
    const known = inFiles.get(id);
    if (known !== undefined) return known;
    const up = parent.get(id);
    const yes = files.test(byId.get(id)!.callFrame.url) || (up !== undefined && within(up));
    inFiles.set(id, yes);
    return yes;
  };
  let busy = 0;
  let under = 0;
  let gc = 0;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    const name = byId.get(id)!.callFrame.functionName;
    if (name === '(idle)') return;
    busy += us;
    if (name === '(garbage collector)') gc += us;
    else if (within(id)) under += us;
  });
  return { busyMs: busy / 1000, under: busy === 0 ? 0 : under / busy, gc: busy === 0 ? 0 : gc / busy };
}
