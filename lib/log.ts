/** Fields of a log line; values must never carry a token or a request body. */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

/** One JSON object per line on a stream: what journald and log shippers read best. */
export interface Logger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** A logger writing JSON lines through `write`, stamped by `now`. */
export function createLogger(write: (line: string) => void, now: () => number = Date.now): Logger {
  const emit = (level: string, message: string, fields: LogFields = {}) => {
    write(`${JSON.stringify({ time: new Date(now()).toISOString(), level, msg: message, ...fields })}\n`);
  };
  return {
    info: (message, fields) => emit('info', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, fields) => emit('error', message, fields),
  };
}
