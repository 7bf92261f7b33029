// The name of the server's pid file in the state directory (the directory's lock).

/**
 * The running server's pid file in the state directory. It is the directory's lock (lock.ts
 * takes it, atomically, and removes it at stop); no command signals the pid it holds, which may
 * belong to an unrelated process after a crash. The CLI reaches the server over the control channel.
 */
export const PID_FILE = 'hooks-ingress.pid';
