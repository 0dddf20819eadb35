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
