// Where the bench's report goes: every line it says passes through `say`, so that `--json` can
// move the whole report to stderr and keep stdout for the JSON summary.
let _toStderr = false;

/** Writes one line of the report. */
export function say(line = ''): void {
  (_toStderr ? process.stderr : process.stdout).write(`${line}\n`);
}

/** From now on the report goes to stderr. */
export function sayOnStderr(): void {
  _toStderr = true;
}
