// Display helpers. Amounts stay bigint (hex quantities from the RPC) until printed.

const CKB = 100_000_000n;

export const big = (hex) => (hex === undefined || hex === null ? 0n : BigInt(hex));

/** Shannons as CKB with up to 8 decimals, trailing zeros dropped. */
export function ckb(hex) {
  const v = big(hex);
  const sign = v < 0n ? '-' : '';
  const a = v < 0n ? -v : v;
  const frac = (a % CKB).toString().padStart(8, '0').replace(/0+$/, '');
  return `${sign}${a / CKB}${frac ? `.${frac}` : ''}`;
}

/** A decimal CKB amount typed in a form → shannons as a hex quantity; throws on a bad number. */
export function ckbToHex(text) {
  const m = /^(\d+)(?:\.(\d{0,8}))?$/.exec(String(text).trim());
  if (!m) throw new Error(`expected an amount in CKB with at most 8 decimals, got '${text}'`);
  const shannons = BigInt(m[1]) * CKB + BigInt((m[2] ?? '').padEnd(8, '0'));
  return `0x${shannons.toString(16)}`;
}

export const short = (s, n = 10) =>
  s && s.length > 2 * n + 1 ? `${s.slice(0, n)}…${s.slice(-6)}` : (s ?? '');

export function time(hexMs) {
  if (!hexMs) return '';
  return new Date(Number(big(hexMs))).toLocaleString();
}

/** Pubkeys appear with and without 0x across methods: compare them bare. */
export const bare = (key) =>
  String(key ?? '')
    .replace(/^0x/, '')
    .toLowerCase();
