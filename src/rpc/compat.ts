/**
 * `rpc.compat: fnn-0.8`: results written with fnn v0.8's names, so that an application written
 * against a current fnn works unchanged (`docs/reference/fiber-rpc.md` §2.1, §2.2). The seed's
 * names stay the default. What changes:
 * - channel records: `state_name` in PascalCase (`ChannelReady`), `state_flags` one string of
 *   names joined by `|` (absent for `ChannelReady`), no `peer_id` (v0.8 writes `pubkey` only);
 * - `list_peers`: `pubkey` and `address` only;
 * - invoice attributes: snake_case keys (the invoice module's `v08` style, set by the caller).
 * Strand-only flags (`RESTORED_FROM_BACKUP`, `LOCAL_STATE_OUTDATED`) have no v0.8 name and are
 * left out: a v0.8 client refuses a flag string with an unknown name.
 */
import { z } from 'zod';
import type { MethodSpec } from './method.ts';
import * as R from './results.ts';

/** Each state's flags in fnn's declaration order, with their bits (composites included). */
const V08_FLAGS: Record<string, [string, number][]> = {
  NEGOTIATING_FUNDING: [
    ['OUR_INIT_SENT', 1],
    ['THEIR_INIT_SENT', 2],
    ['INIT_SENT', 3],
    ['AWAITING_EXTERNAL_FUNDING', 4],
  ],
  COLLABORATING_FUNDING_TX: [
    ['AWAITING_REMOTE_TX_COLLABORATION_MSG', 1],
    ['PREPARING_LOCAL_TX_COLLABORATION_MSG', 2],
    ['OUR_TX_COMPLETE_SENT', 4],
    ['THEIR_TX_COMPLETE_SENT', 8],
    ['COLLABORATION_COMPLETED', 12],
  ],
  SIGNING_COMMITMENT: [
    ['OUR_COMMITMENT_SIGNED_SENT', 1],
    ['THEIR_COMMITMENT_SIGNED_SENT', 2],
    ['COMMITMENT_SIGNED_SENT', 3],
  ],
  AWAITING_TX_SIGNATURES: [
    ['OUR_TX_SIGNATURES_SENT', 1],
    ['THEIR_TX_SIGNATURES_SENT', 2],
    ['TX_SIGNATURES_SENT', 3],
  ],
  AWAITING_CHANNEL_READY: [
    ['OUR_CHANNEL_READY', 1],
    ['THEIR_CHANNEL_READY', 2],
    ['CHANNEL_READY', 3],
  ],
  SHUTTING_DOWN: [
    ['OUR_SHUTDOWN_SENT', 1],
    ['THEIR_SHUTDOWN_SENT', 2],
    ['AWAITING_PENDING_TLCS', 3],
    ['DROPPING_PENDING', 4],
    ['WAITING_COMMITMENT_CONFIRMATION', 8],
  ],
  CLOSED: [
    ['COOPERATIVE', 1],
    ['UNCOOPERATIVE_LOCAL', 2],
    ['ABANDONED', 4],
    ['FUNDING_ABORTED', 8],
    ['UNCOOPERATIVE_REMOTE', 16],
    ['WAITING_ONCHAIN_SETTLEMENT', 32],
  ],
};

/** `CHANNEL_READY` → `ChannelReady`, `COLLABORATING_FUNDING_TX` → `CollaboratingFundingTx`. */
export function v08StateName(name: string): string {
  return name
    .split('_')
    .map((w) => w.charAt(0) + w.slice(1).toLowerCase())
    .join('');
}

/**
 * The flag string fnn v0.8 writes: every name (composites too) any of whose bits is set, in
 * declaration order, joined by `|`; `""` when none.
 */
export function v08Flags(state: string, flags: string[]): string {
  const table = V08_FLAGS[state] ?? [];
  let bits = 0;
  for (const f of flags) bits |= table.find(([n]) => n === f)?.[1] ?? 0;
  return table
    .filter(([, v]) => (bits & v) !== 0)
    .map(([n]) => n)
    .join('|');
}

type ChannelJson = z.output<typeof R.channelRecord>;

export function v08Channel(ch: ChannelJson) {
  const { peer_id: _peerId, state, ...rest } = ch;
  const state_name = v08StateName(state.state_name);
  return {
    ...rest,
    state:
      state_name === 'ChannelReady'
        ? { state_name }
        : { state_name, state_flags: v08Flags(state.state_name, state.state_flags) },
  };
}

const v08StateNames = [
  'NegotiatingFunding',
  'CollaboratingFundingTx',
  'SigningCommitment',
  'AwaitingTxSignatures',
  'AwaitingChannelReady',
  'ShuttingDown',
  'Closed',
] as const;

const v08ChannelRecord = R.channelRecord.omit({ peer_id: true, state: true }).extend({
  state: z.union([
    z.strictObject({ state_name: z.literal('ChannelReady') }),
    z.strictObject({
      state_name: z.enum(v08StateNames),
      state_flags: z.string().regex(/^([A-Z_]+(\|[A-Z_]+)*)?$/),
    }),
  ]),
});

const v08Peers = z.strictObject({
  peers: z.array(z.strictObject({ pubkey: R.pubkeyHex, address: z.string() })),
});

/** Per method: the v0.8 form of a seed result, and the schema of that form. */
const CONVERSIONS: Record<string, { convert(result: unknown): unknown; result: z.ZodType }> = {
  list_channels: {
    convert: (r) => ({ channels: (r as { channels: ChannelJson[] }).channels.map(v08Channel) }),
    result: z.strictObject({ channels: z.array(v08ChannelRecord) }),
  },
  list_peers: {
    convert: (r) => ({
      peers: (r as { peers: { pubkey: string; address: string }[] }).peers.map((p) => ({
        pubkey: p.pubkey,
        address: p.address,
      })),
    }),
    result: v08Peers,
  },
};

/** The specs as served under `compat`: under `fnn-0.8`, converted results and their schemas. */
export function applyCompat(specs: MethodSpec[], compat: 'seed' | 'fnn-0.8'): MethodSpec[] {
  if (compat === 'seed') return specs;
  return specs.map((spec) => {
    const conv = CONVERSIONS[spec.name];
    if (!conv) return spec;
    return {
      ...spec,
      result: conv.result,
      handler: async (params, ctx) => conv.convert(await spec.handler(params, ctx)),
    };
  });
}

/** Names of the methods whose results differ under `fnn-0.8` (invoice attributes aside). */
export const COMPAT_METHODS = Object.keys(CONVERSIONS);
