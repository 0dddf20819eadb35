/**
 * The settlement script a commitment cell carries in its lock args (its hash) and reveals in the
 * witness of each settlement (`fiber-channel-protocol.md` §5.3): reading it, and the script the
 * contract requires of the continuation cell once TLCs or a party's share are settled. Shared by
 * the channel (its own share settled) and the watchtower (settling on behalf of a client).
 */
import { concat } from '../codec/index.ts';

export const TLC_LEN = 85;

export interface ParsedScript {
  tlcs: Uint8Array[];
  /** holderPKH ‖ le128 ‖ otherPKH ‖ le128 (72 bytes). */
  party: Uint8Array;
}

export function parseSettlementScript(s: Uint8Array): ParsedScript | null {
  const c = s[0];
  if (c === undefined || s.length !== 1 + TLC_LEN * c + 72) return null;
  const tlcs = Array.from({ length: c }, (_, k) => s.slice(1 + TLC_LEN * k, 1 + TLC_LEN * (k + 1)));
  return { tlcs, party: s.slice(1 + TLC_LEN * c) };
}

/** The script left after settling TLC `tlc` and/or a party block (0xFE holder, 0xFF other). */
export function scriptAfter(p: ParsedScript, tlc: number | null, party: 0xfe | 0xff | null): Uint8Array {
  return rebuild(p, (k) => k !== tlc, party);
}

/** The script with the TLCs `keep` accepts, and the party block zeroed for a settled party. */
function rebuild(p: ParsedScript, keep: (k: number) => boolean, party: 0xfe | 0xff | null): Uint8Array {
  const kept = p.tlcs.filter((_, k) => keep(k));
  const zeros = new Uint8Array(36);
  const block =
    party === 0xfe
      ? concat(zeros, p.party.subarray(36))
      : party === 0xff
        ? concat(p.party.subarray(0, 36), zeros)
        : p.party;
  return concat(new Uint8Array([kept.length]), ...kept, block);
}

/**
 * The settlement script of the cell a settlement tx created, from that tx's commitment-lock
 * witness (`XW ‖ uc ‖ script ‖ entries`): what the contract computed as the new script.
 */
export function scriptAfterWitness(witness: Uint8Array): Uint8Array | null {
  if (witness.length < 18 || witness[16] === 0) return null;
  const w = witness.subarray(17);
  const c = w[0] as number;
  const S = 1 + TLC_LEN * c + 72;
  if (w.length < S) return null;
  const p = parseSettlementScript(w.slice(0, S));
  if (!p) return null;
  const settled = new Set<number>();
  let party: 0xfe | 0xff | null = null;
  for (let i = S; i < w.length; ) {
    const t = w[i] as number;
    const pre = w[i + 1];
    if (pre !== 0 && pre !== 1) return null;
    if (t < c) settled.add(t);
    else if (t === 0xfe || t === 0xff) party = t;
    else return null;
    i += 2 + 65 + (pre === 1 ? 32 : 0);
  }
  return rebuild(p, (k) => !settled.has(k), party);
}
