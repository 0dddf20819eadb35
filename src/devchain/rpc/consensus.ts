/**
 * `get_consensus` and the epoch views, in CKB's JSON shapes (ckb-jsonrpc-types `Consensus`,
 * `EpochView`). A client such as fnn's CKB SDK reads the system script type hashes from here
 * before it collects cells; the rest are CKB's dev-chain values (every hard fork active from
 * epoch 0, no soft-fork deployments), which nothing on this chain depends on.
 */
import { ccc } from '@ckb-ccc/core';
import { toHexQuantity as q } from '../../codec/index.ts';
import type { DevChain } from '../chain.ts';
import { TYPE_ID_CODE_HASH } from '../genesis.ts';

/** Genesis tx0 outputs of CKB's system cells (the spec's `system_cells` order, after output 0). */
const SIGHASH_OUTPUT = 1;
const DAO_OUTPUT = 2;
const MULTISIG_OUTPUT = 4;
const HARD_FORK_RFCS = ['0028', '0029', '0030', '0031', '0032', '0036', '0038', '0048', '0049'];

export function consensusJson(chain: DevChain) {
  const tx0 = chain.blockByNumber(0n)!.transactions[0]!;
  const typeHash = (i: number) => tx0.outputs[i]?.type?.hash() ?? null;
  return {
    id: 'ckb_dev',
    genesis_hash: chain.genesisHash,
    dao_type_hash: typeHash(DAO_OUTPUT) ?? ccc.hexFrom(new Uint8Array(32)),
    secp256k1_blake160_sighash_all_type_hash: typeHash(SIGHASH_OUTPUT),
    secp256k1_blake160_multisig_all_type_hash: typeHash(MULTISIG_OUTPUT),
    initial_primary_epoch_reward: q(191_780_821_917_808n),
    secondary_epoch_reward: q(61_369_863_013_698n),
    max_uncles_num: q(2),
    orphan_rate_target: { denom: q(40), numer: q(1) },
    epoch_duration_target: q(14_400),
    tx_proposal_window: { closest: q(2), farthest: q(10) },
    proposer_reward_ratio: { denom: q(10), numer: q(4) },
    // No block rewards here: cellbases are mature at once.
    cellbase_maturity: q(0),
    median_time_block_count: q(37),
    max_block_cycles: q(10_000_000_000),
    max_block_bytes: q(597_000),
    block_version: q(0),
    tx_version: q(0),
    type_id_code_hash: TYPE_ID_CODE_HASH,
    max_block_proposals_limit: q(1500),
    primary_epoch_reward_halving_interval: q(8760),
    permanent_difficulty_in_dummy: true,
    hardfork_features: HARD_FORK_RFCS.map((rfc) => ({ rfc, epoch_number: q(0) })),
    softforks: {},
  };
}

/** CKB's `EpochView` of epoch `number`, or null when the chain has not reached it. */
export function epochJson(chain: DevChain, number: bigint) {
  const startNumber = number * chain.epochLength;
  if (startNumber > chain.tip.number) return null;
  return {
    compact_target: q(chain.tip.compactTarget),
    length: q(chain.epochLength),
    number: q(number),
    start_number: q(startNumber),
  };
}
