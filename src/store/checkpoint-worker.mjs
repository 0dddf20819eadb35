// The thread that checkpoints the node's SQLite WAL (`checkpointer.ts` is its other side): it
// copies the pages committed to the WAL back into the database file, on its own connection, so
// that the node's thread never does. Plain JavaScript: a worker does not get tsx's loader.
//
// workerData: { file, intervalMs }. Messages out: { ready: true } once the connection is open, or
// { unavailable: reason } (the node then checkpoints on its own thread, as SQLite does by
// default); { stats } when asked ('stats'); { stopped: true } after 'stop' closed the connection.
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

const { file, intervalMs } = workerData;
let db;
try {
  const Database = createRequire(import.meta.url)('better-sqlite3');
  db = new Database(file, { fileMustExist: true });
  // PASSIVE never waits for the node's connection; a checkpoint already running (the node's own,
  // past its fallback threshold) makes this one give up at once and try at the next tick.
  db.pragma('busy_timeout = 0');
  parentPort.postMessage({ ready: true });
} catch (e) {
  parentPort.postMessage({ unavailable: e instanceof Error ? e.message : String(e) });
}

/** Passes made after a commit, passes that met a busy lock, failed passes, the WAL's largest size (frames). */
const stats = { runs: 0, busy: 0, errors: 0, maxFrames: 0 };

/** `data_version` at the last pass: it changes when the node's connection commits. */
let seenVersion = -1;

/** One PASSIVE pass: { busy, log: frames in the WAL, checkpointed: frames copied back }. */
function pass() {
  const [r] = db.pragma('wal_checkpoint(PASSIVE)');
  return r;
}

function tick() {
  try {
    // Nothing committed since the last pass: nothing to copy.
    const version = db.pragma('data_version', { simple: true });
    if (version === seenVersion) return;
    const r = pass();
    stats.maxFrames = Math.max(stats.maxFrames, r.log);
    if (r.busy !== 0) {
      stats.busy++;
      return;
    }
    seenVersion = version;
    stats.runs++;
    // Frames the node committed while the pass ran: a second, short pass takes them, so the WAL
    // is more often wholly copied back, which is when the node's next write rewinds it.
    if (r.checkpointed < r.log) pass();
  } catch {
    // A locked WAL: the next tick tries again; the node's own fallback bounds the WAL.
    stats.errors++;
  }
}

/**
 * Whether the last pass began after the node's latest commit, so that it copied every frame
 * committed so far: `data_version` has not moved since. The node's next write then rewinds the WAL.
 */
function caughtUp() {
  try {
    return db !== undefined && db.pragma('data_version', { simple: true }) === seenVersion;
  } catch {
    return false;
  }
}

const timer = db ? setInterval(tick, intervalMs) : undefined;

parentPort.on('message', (m) => {
  if (m === 'stats') parentPort.postMessage({ stats: { ...stats, caughtUp: caughtUp() } });
  else if (m === 'stop') {
    clearInterval(timer);
    try {
      db?.close();
    } catch {
      // Closing is best effort: the node closes its own connection next, which checkpoints.
    }
    parentPort.postMessage({ stopped: true });
    parentPort.close();
  }
});
