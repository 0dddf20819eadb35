/**
 * Structured logs on stdout (pino), level from `log_level` / `STRAND_LOG`: JSON lines, or with
 * `log_format: pretty` one readable line per entry (`pretty-log.ts`, no extra dependency).
 */
import { pino } from 'pino';
import { prettyStream } from './pretty-log.ts';

export type Logger = pino.Logger;

export type LogFormat = 'json' | 'pretty';

export function createLogger(level: string, name = 'strand', format: LogFormat = 'json'): Logger {
  const out = pino.destination({ dest: 1, sync: false });
  return pino({ name, level, base: { pid: process.pid } }, format === 'pretty' ? prettyStream(out) : out);
}

/** A logger that drops everything (unit tests, tools). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

interface FlushableStream {
  flush?(cb: (err?: Error) => void): void;
  flushSync?(): void;
  /** The stream a formatting stream writes to (the one pino flushes at exit). */
  inner?: FlushableStream;
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
  if (stream?.inner) stream.inner.flushSync = () => {};
}

function streamOf(log: Logger): FlushableStream | undefined {
  return (log as unknown as Record<symbol, FlushableStream | undefined>)[pino.symbols.streamSym];
}
