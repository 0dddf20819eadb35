/** Node feature bits (fiber-rpc.md §2.9): bit b is in byte b/8, mask 1 << (b % 8). */
export const FEATURE_NAMES = [
  'GOSSIP_QUERIES_REQUIRED',
  'GOSSIP_QUERIES_OPTIONAL',
  'BASIC_MPP_REQUIRED',
  'BASIC_MPP_OPTIONAL',
  'TRAMPOLINE_ROUTING_REQUIRED',
  'TRAMPOLINE_ROUTING_OPTIONAL',
] as const;

export function featureNames(features: Uint8Array): string[] {
  const out: string[] = [];
  for (let bit = 0; bit < features.length * 8; bit++) {
    if (((features[bit >> 3] ?? 0) >> (bit & 7)) & 1) out.push(FEATURE_NAMES[bit] ?? `UNKNOWN_${bit}`);
  }
  return out;
}

/** The feature vector of a list of names (unknown names are ignored). */
export function featureBytes(names: readonly string[]): Uint8Array {
  const bits = names
    .map((n) => FEATURE_NAMES.indexOf(n as (typeof FEATURE_NAMES)[number]))
    .filter((b) => b >= 0);
  const out = new Uint8Array(Math.max(1, Math.floor(Math.max(0, ...bits) / 8) + 1));
  for (const b of bits) out[b >> 3]! |= 1 << (b & 7);
  return out;
}
