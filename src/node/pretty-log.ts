/**
 * `log_format: pretty`: pino's JSON lines rewritten as one readable line each —
 * `12:04:05.123 INFO  channel ready  channel_id=0x… state=CHANNEL_READY` — written to the same
 * stdout stream the JSON would go to (flushes and the exit path are unchanged).
 */

/** The part of sonic-boom (pino.destination) used here. */
export interface LineSink {
  write(text: string): boolean;
  flush?(cb: (err?: Error) => void): void;
  flushSync?(): void;
}

const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
/** Fields every line has, shown in the line's head or not at all. */
const HIDDEN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'name']);

export function prettyStream(sink: LineSink, color = process.stdout.isTTY === true) {
  return {
    inner: sink,
    write(line: string): boolean {
      return sink.write(`${formatLine(line, color)}\n`);
    },
    flush: sink.flush ? (cb: (err?: Error) => void) => sink.flush!(cb) : undefined,
    flushSync: sink.flushSync ? () => sink.flushSync!() : undefined,
  };
}

/** One JSON log line as text; a line that is not JSON is kept as it is. */
export function formatLine(line: string, color = false): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.trimEnd();
  }
  const level = LEVELS[entry.level as number] ?? String(entry.level);
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString().slice(11, 23) : '';
  const fields = Object.entries(entry)
    .filter(([k]) => !HIDDEN.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? quoteIfNeeded(v) : JSON.stringify(v)}`)
    .join(' ');
  const head = color ? paint(level) : level.padEnd(5);
  return `${time} ${head} ${String(entry.msg ?? '')}${fields ? `  ${fields}` : ''}`;
}

function quoteIfNeeded(v: string): string {
  return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
}

function paint(level: string): string {
  const code =
    level === 'ERROR' || level === 'FATAL' ? 31 : level === 'WARN' ? 33 : level === 'INFO' ? 32 : 90;
  return `\u001b[${code}m${level.padEnd(5)}\u001b[0m`;
}
