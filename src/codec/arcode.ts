/**
 * Adaptive arithmetic coder, bit-exact with the Rust crate `arcode` 0.2.4 as Fiber configures it
 * for invoices: 8-bit symbols plus an end-of-file symbol (257 symbols, every count starting at 1),
 * 48-bit precision, bits written most-significant first and padded with zeros to a whole byte.
 *
 * Written by hand because no maintained JS library reproduces that crate's exact output: the
 * interval arithmetic uses f64 probabilities truncated towards zero, strict half/quarter
 * comparisons and the "pending bits" scheme, and any deviation changes the compressed bytes (and
 * with them every invoice string and signature). Values stay below 2^49, so plain JS numbers are
 * exact; never use 32-bit bitwise operators on them.
 */

const PRECISION = 48;
const FULL = 2 ** PRECISION;
const HALF = FULL / 2;
const QUARTER = FULL / 4;
const THREE_QUARTERS = QUARTER * 3;
const SYMBOLS = 257; // bytes 0..255 and EOF
const EOF = 256;

/** Thrown by `arDecompress` on input that is not a complete arcode stream (or decodes too long). */
export class ArcodeError extends Error {
  override name = 'ArcodeError';
}

/** Adaptive frequency model: counts with a Fenwick tree for prefix sums, as the crate does. */
class Model {
  private readonly counts = new Uint32Array(SYMBOLS).fill(1);
  private readonly tree = new Float64Array(SYMBOLS + 1);
  total = SYMBOLS;

  constructor() {
    for (let i = 0; i < SYMBOLS; i++) this.add(i, 1);
  }

  private add(symbol: number, delta: number): void {
    for (let i = symbol + 1; i <= SYMBOLS; i += i & -i) this.tree[i] += delta;
  }

  /** Sum of counts of symbols 0..=symbol. */
  private prefix(symbol: number): number {
    let s = 0;
    for (let i = symbol + 1; i > 0; i -= i & -i) s += this.tree[i];
    return s;
  }

  update(symbol: number): void {
    this.counts[symbol] += 1;
    this.total += 1;
    this.add(symbol, 1);
  }

  /** New (low, high) of the coding interval for `symbol` within [low, high). */
  range(symbol: number, low: number, high: number): [number, number] {
    const cumHigh = this.prefix(symbol);
    const cumLow = cumHigh - this.counts[symbol];
    const width = high - low;
    // Same f64 operations in the same order as the crate: divide, multiply, truncate.
    return [
      low + Math.trunc(width * (cumLow / this.total)),
      low + Math.trunc(width * (cumHigh / this.total)),
    ];
  }
}

class BitWriter {
  private readonly bytes: number[] = [];
  private current = 0;
  private filled = 0;

  write(bit: number): void {
    this.current = (this.current << 1) | bit;
    if (++this.filled === 8) {
      this.bytes.push(this.current);
      this.current = 0;
      this.filled = 0;
    }
  }

  finish(): Uint8Array {
    if (this.filled > 0) this.bytes.push(this.current << (8 - this.filled));
    return Uint8Array.from(this.bytes);
  }
}

/** Compresses `data` exactly as Fiber's `ar_encompress`. */
export function arCompress(data: Uint8Array): Uint8Array {
  const model = new Model();
  const out = new BitWriter();
  let low = 0;
  let high = FULL;
  let pending = 0;

  const emit = (bit: number) => {
    out.write(bit);
    for (; pending > 0; pending--) out.write(bit ^ 1);
  };

  const encode = (symbol: number) => {
    [low, high] = model.range(symbol, low, high);
    while (high < HALF || low > HALF) {
      if (high < HALF) {
        low *= 2;
        high *= 2;
        emit(0);
      } else {
        low = (low - HALF) * 2;
        high = (high - HALF) * 2;
        emit(1);
      }
    }
    while (low > QUARTER && high < THREE_QUARTERS) {
      pending++;
      low = (low - QUARTER) * 2;
      high = (high - QUARTER) * 2;
    }
  };

  for (const byte of data) {
    encode(byte);
    model.update(byte);
  }
  encode(EOF);
  pending++;
  emit(low <= QUARTER ? 0 : 1);
  return out.finish();
}

export interface DecompressOptions {
  /** Refuse output longer than this many bytes (hostile input can expand enormously). */
  maxOutput?: number;
}

/**
 * Decompresses exactly as Fiber's `ar_decompress`: reads past the end of the input yield zero
 * bits, at most 48 times; one more read is an error (the crate's "EOF symbol has not been
 * decoded"). Throws ArcodeError on such input and when the output would exceed `maxOutput`.
 */
export function arDecompress(data: Uint8Array, opts: DecompressOptions = {}): Uint8Array {
  const maxOutput = opts.maxOutput ?? 1 << 20;
  const model = new Model();
  let bitPos = 0;
  const totalBits = data.length * 8;
  let zeroReadsLeft = PRECISION;

  const bit = (): number => {
    if (bitPos < totalBits) {
      const b = (data[bitPos >> 3] >> (7 - (bitPos & 7))) & 1;
      bitPos++;
      return b;
    }
    if (zeroReadsLeft === 0) throw new ArcodeError('unexpected end of compressed data (no EOF symbol)');
    zeroReadsLeft--;
    return 0;
  };

  let buffer = 0;
  for (let i = 0; i < PRECISION; i++) buffer = buffer * 2 + bit();
  let low = 0;
  let high = FULL;
  const out: number[] = [];

  for (;;) {
    // Binary search over the symbols for the interval holding `buffer`, as the crate does.
    let lo = 0;
    let hi = SYMBOLS;
    let symbol = -1;
    let range: [number, number] = [0, 0];
    while (lo <= hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (mid >= SYMBOLS) break; // the crate would index out of bounds (panic); cannot happen on the invariant
      range = model.range(mid, low, high);
      if (range[0] <= buffer && buffer < range[1]) {
        symbol = mid;
        break;
      }
      if (buffer >= range[1]) lo = mid + 1;
      else {
        if (mid === 0) break; // the crate would underflow here
        hi = mid - 1;
      }
    }
    if (symbol < 0) throw new ArcodeError('corrupt compressed data (no symbol interval)');
    if (symbol === EOF) break;
    if (out.length >= maxOutput) throw new ArcodeError(`decompressed data exceeds ${maxOutput} bytes`);
    out.push(symbol);
    model.update(symbol);

    [low, high] = range;
    while (high < HALF || low > HALF) {
      if (high < HALF) {
        low *= 2;
        high *= 2;
        buffer = buffer * 2 + bit();
      } else {
        low = (low - HALF) * 2;
        high = (high - HALF) * 2;
        buffer = (buffer - HALF) * 2 + bit();
      }
    }
    while (low > QUARTER && high < THREE_QUARTERS) {
      low = (low - QUARTER) * 2;
      high = (high - QUARTER) * 2;
      buffer = (buffer - QUARTER) * 2 + bit();
    }
  }
  return Uint8Array.from(out);
}
