/**
 * `graph` module: `graph_nodes`, `graph_channels` (fiber-rpc.md §1.6, record fields §2.5). As the
 * reference, both page through the stored broadcast messages in cursor order: `after` is the
 * opaque 45-byte `last_cursor` of the previous page (exclusive), `limit` defaults to 500;
 * `last_cursor` is `0x` for an empty page. A malformed cursor is -32602 with the reference's
 * text (`Invalid cursor size: N, want 45`, …) and the params as data. Channels whose two
 * directions are both disabled are left out, as the reference does.
 */
import { multiaddr } from '@multiformats/multiaddr';
import { z } from 'zod';
import {
  bytesToHex,
  HASH_TYPE_BYTE,
  hexToBytes,
  InvalidParams,
  mol,
  toHexQuantity,
} from '../../codec/index.ts';
import type {
  ChannelUpdate,
  GraphService,
  ListedChannel,
  MolScript,
  NodeAnnouncement,
  UdtArgInfo,
  UdtDep,
} from '../../graph/index.ts';
import { CursorError, featureNames, parseCursor, ZERO_CURSOR } from '../../graph/index.ts';
import { type MethodSpec, method } from '../method.ts';
import * as R from '../results.ts';
import { bytes, u64 } from '../schema.ts';

/** What the module reads of the graph. */
export type GraphQueries = Pick<GraphService, 'listNodes' | 'listChannels'>;

const params = z.object({ limit: u64.optional(), after: bytes.optional() });

const DEFAULT_LIMIT = 500;
const HASH_TYPES: Record<number, string> = Object.fromEntries(
  Object.entries(HASH_TYPE_BYTE).map(([name, byte]) => [byte, name]),
);

const lossy = new TextDecoder('utf-8');

function scriptJson(s: MolScript) {
  return {
    code_hash: bytesToHex(s.codeHash),
    hash_type: HASH_TYPES[s.hashType] ?? 'data',
    args: bytesToHex(s.args),
  };
}

function udtDepJson(d: UdtDep) {
  if (d.type === 'script') return { type_id: scriptJson(d.script) };
  return {
    cell_dep: {
      out_point: { tx_hash: bytesToHex(d.outPoint.txHash), index: toHexQuantity(d.outPoint.index) },
      dep_type: d.depType === 1 ? 'dep_group' : 'code',
    },
  };
}

function udtJson(u: UdtArgInfo) {
  return {
    name: lossy.decode(u.name),
    script: {
      code_hash: bytesToHex(u.script.codeHash),
      hash_type: HASH_TYPES[u.script.hashType] ?? 'data',
      args: lossy.decode(u.script.args),
    },
    auto_accept_amount: u.autoAcceptAmount === null ? null : toHexQuantity(u.autoAcceptAmount),
    cell_deps: u.cellDeps.map(udtDepJson),
  };
}

function addressText(raw: Uint8Array): string {
  try {
    return multiaddr(raw).toString();
  } catch {
    return bytesToHex(raw);
  }
}

export function nodeInfoJson(n: NodeAnnouncement) {
  let end = n.nodeName.indexOf(0);
  if (end < 0) end = n.nodeName.length;
  return {
    node_name: lossy.decode(n.nodeName.subarray(0, end)),
    version: lossy.decode(n.version),
    addresses: n.addresses.map(addressText),
    features: featureNames(n.features),
    pubkey: bytesToHex(n.nodeId, false),
    timestamp: toHexQuantity(n.timestamp),
    chain_hash: bytesToHex(n.chainHash),
    auto_accept_min_ckb_funding_amount: toHexQuantity(n.autoAcceptMinCkbFundingAmount),
    udt_cfg_infos: n.udtCfgInfos.map(udtJson),
  };
}

function updateInfoJson(u: ChannelUpdate | null) {
  if (!u) return null;
  return {
    timestamp: toHexQuantity(u.timestamp),
    enabled: (u.channelFlags & 1) === 0,
    outbound_liquidity: null,
    tlc_expiry_delta: toHexQuantity(u.tlcExpiryDelta),
    tlc_minimum_value: toHexQuantity(u.tlcMinimumValue),
    fee_rate: toHexQuantity(u.feeRate),
  };
}

export function channelInfoJson(c: ListedChannel) {
  const a = c.announcement;
  return {
    channel_outpoint: bytesToHex(mol.OutPoint.encode(a.channelOutpoint)),
    node1: bytesToHex(a.node1Id, false),
    node2: bytesToHex(a.node2Id, false),
    created_timestamp: toHexQuantity(c.createdTimestamp),
    update_info_of_node1: updateInfoJson(c.update1),
    update_info_of_node2: updateInfoJson(c.update2),
    capacity: toHexQuantity(a.capacity),
    chain_hash: bytesToHex(a.chainHash),
    udt_type_script: a.udtTypeScript ? scriptJson(a.udtTypeScript) : null,
  };
}

function pageArgs(p: z.output<typeof params>): { limit: number; after: Uint8Array } {
  const raw = { limit: p.limit === undefined ? null : toHexQuantity(p.limit), after: p.after ?? null };
  let after: Uint8Array = ZERO_CURSOR;
  if (p.after !== undefined) {
    try {
      after = parseCursor(hexToBytes(p.after, 'after'));
    } catch (e) {
      if (e instanceof CursorError) throw new InvalidParams(e.message, raw);
      throw e;
    }
  }
  // The reference has no upper cap, and 0 means no limit.
  const requested = p.limit ?? BigInt(DEFAULT_LIMIT);
  const limit =
    requested === 0n || requested > BigInt(Number.MAX_SAFE_INTEGER)
      ? Number.MAX_SAFE_INTEGER
      : Number(requested);
  return { limit, after };
}

export function graphMethods(graph: GraphQueries): MethodSpec[] {
  return [
    method({
      name: 'graph_nodes',
      module: 'graph',
      description:
        "The nodes of the gossiped network graph, a page at a time (`limit`, default 500; `after` = the previous page's `last_cursor`).",
      result: R.graphNodesResult,
      examples: [
        { name: 'an empty graph', params: { limit: '0x2' }, result: { nodes: [], last_cursor: '0x' } },
      ],
      params,
      handler: (p) => {
        const { limit, after } = pageArgs(p);
        const page = graph.listNodes(limit, after);
        return {
          nodes: page.nodes.map(nodeInfoJson),
          last_cursor: page.lastCursor ? bytesToHex(page.lastCursor) : '0x',
        };
      },
    }),
    method({
      name: 'graph_channels',
      module: 'graph',
      description:
        "The public channels of the gossiped network graph with each direction's forwarding terms, a page at a time.",
      result: R.graphChannelsResult,
      params,
      handler: (p) => {
        const { limit, after } = pageArgs(p);
        const page = graph.listChannels(limit, after);
        return {
          channels: page.channels.map(channelInfoJson),
          last_cursor: page.lastCursor ? bytesToHex(page.lastCursor) : '0x',
        };
      },
    }),
  ];
}
