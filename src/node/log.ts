/** Structured logs: JSON lines on stdout (pino), level from `log_level` / `STRAND_LOG`. */
import { pino } from 'pino';

export type Logger = pino.Logger;

export function createLogger(level: string, name = 'strand'): Logger {
  return pino({ name, level, base: { pid: process.pid } }, pino.destination({ dest: 1, sync: false }));
}

/** A logger that drops everything (unit tests, tools). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

interface FlushableStream {
  flush?(cb: (err?: Error) => void): void;
  flushSync?(): void;
}

/**
 * Writes out buffered log lines, waiting at most `timeoutMs`, then leaves nothing for the flush
 * at exit: sonic-boom's exit flush retries a write to a broken pipe (a stdout whose reader died)
 * forever, which kept nodes alive after SIGTERM. Lines stdout could not take by then are dropped.
 */
export function flushLogsForExit(log: Logger, timeoutMs = 1000): Promise<void> {
  const stream = streamOf(log);
  const flush = stream?.flush?.bind(stream);
  return new Promise<void>((resolve) => {
    if (!flush) return resolve();
    const timer = setTimeout(resolve, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    try {
      flush(done);
    } catch {
      done();
    }
  }).then(() => dropPendingLogs(log));
}

/** Log lines not yet written are not written at exit (an exit that must not wait for stdout). */
export function dropPendingLogs(log: Logger): void {
  const stream = streamOf(log);
  if (stream) stream.flushSync = () => {};
}

function streamOf(log: Logger): FlushableStream | undefined {
  return (log as unknown as Record<symbol, FlushableStream | undefined>)[pino.symbols.streamSym];
}
