/**
 * The reestablish decision, pure: which commitment numbers resume the channel (in sync, or the
 * one-message gaps the replay closes), which prove our own state outdated (a restore from an
 * older backup: never publish our commitment, ask the peer to close) and which prove the peer's
 * outdated (close with our latest, unless our own store is an unconfirmed restore).
 */
import { ccc } from '@ckb-ccc/core';
import { describe, expect, it } from 'vitest';
import { checkpointBackupStore } from '../../src/channel/checkpoint.ts';
import { ChannelError } from '../../src/channel/errors.ts';
import { step } from '../../src/channel/machine.ts';
import { FORCE_CLOSE_REQUEST, syncVerdict } from '../../src/channel/outdated.ts';
import type { Channel, Flag, Round } from '../../src/channel/state.ts';
import type { Effect, MachineEnv } from '../../src/channel/step.ts';
import { ChannelStore, channelSchema } from '../../src/channel/store.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { openDatabase } from '../../src/store/db.ts';

const ID = `0x${'ab'.repeat(32)}`;
const env = {} as MachineEnv; // the paths under test never reach the chain scripts

/** A signed-looking commitment: only its bytes and hash matter here. */
const COMMITMENT = ccc.Transaction.from({
  inputs: [{ previousOutput: { txHash: `0x${'11'.repeat(32)}`, index: 0 }, since: 0n }],
  outputs: [
    {
      capacity: 700n * 100_000_000n,
      lock: { codeHash: `0x${'22'.repeat(32)}`, hashType: 'type', args: '0x' },
    },
  ],
  outputsData: ['0x'],
  witnesses: ['0x1234'],
});

function ready(L: bigint, R: bigint, o: { round?: Round | null; flags?: Flag[] } = {}): Channel {
  return {
    id: ID,
    tempId: ID,
    peer: '02'.padEnd(66, '3'),
    isAcceptor: false,
    isPublic: false,
    state: 'CHANNEL_READY',
    flags: o.flags ?? [],
    createdAt: 0,
    nonces: { mine: [], theirs: [] },
    commitmentNumbers: { local: L, remote: R },
    round: o.round ?? null,
    tlcs: [],
    latestCommitmentTx: bytesToHex(COMMITMENT.toBytes()),
    latestCommitmentTxHash: COMMITMENT.hash(),
    failureDetail: null,
  } as unknown as Channel;
}

const reestablish = (pL: bigint, pR: bigint) =>
  ({
    type: 'peer',
    msg: {
      type: 'ReestablishChannel',
      value: { channelId: ccc.bytesFrom(ID), localCommitmentNumber: pL, remoteCommitmentNumber: pR },
    },
  }) as const;

const abort = (text: string) =>
  ({
    type: 'peer',
    msg: {
      type: 'TxAbort',
      value: { channelId: ccc.bytesFrom(ID), message: new TextEncoder().encode(text) },
    },
  }) as const;

const sent = (effects: Effect[]) => effects.flatMap((e) => (e.type === 'send' ? [e.msg] : []));
const broadcasts = (effects: Effect[]) => effects.filter((e) => e.type === 'broadcast');
const verdict = (ch: Channel, pL: bigint, pR: bigint) =>
  syncVerdict(ch, { localCommitmentNumber: pL, remoteCommitmentNumber: pR }).kind;

describe('syncVerdict', () => {
  const awaiting: Round = { initiator: 'local' };
  it('resumes in sync and across the gaps one lost message leaves', () => {
    expect(verdict(ready(7n, 7n), 7n, 7n)).toBe('resume');
    // The peer missed our RevokeAndAck.
    expect(verdict(ready(8n, 8n), 7n, 8n)).toBe('resume');
    // We missed the peer's RevokeAndAck to our CommitmentSigned.
    expect(verdict(ready(7n, 7n, { round: awaiting }), 7n, 8n)).toBe('resume');
    expect(verdict(ready(7n, 7n, { round: { initiator: 'remote' } }), 7n, 8n)).toBe('resume');
    // The peer has not seen ChannelReady's increment yet.
    expect(verdict(ready(2n, 2n), 1n, 1n)).toBe('resume');
  });

  it('finds us behind by one round, by many, and by a revocation we never asked for', () => {
    expect(verdict(ready(7n, 7n), 8n, 8n)).toBe('we-are-behind');
    expect(verdict(ready(7n, 7n), 40n, 40n)).toBe('we-are-behind');
    expect(verdict(ready(7n, 7n), 8n, 7n)).toBe('we-are-behind');
    // The peer revoked in answer to a CommitmentSigned we have no record of.
    expect(verdict(ready(7n, 7n), 7n, 8n)).toBe('we-are-behind');
    expect(verdict(ready(7n, 7n, { round: { initiator: 'local', gotRevoke: true } }), 7n, 8n)).toBe(
      'we-are-behind',
    );
    expect(verdict(ready(7n, 7n, { round: awaiting }), 7n, 9n)).toBe('we-are-behind');
  });

  it('finds the peer behind beyond one step', () => {
    expect(verdict(ready(9n, 9n), 7n, 7n)).toBe('peer-is-behind');
    expect(verdict(ready(40n, 40n), 2n, 2n)).toBe('peer-is-behind');
    expect(verdict(ready(9n, 8n), 8n, 7n)).toBe('peer-is-behind');
  });
});

describe('a channel whose state is outdated', () => {
  it('is marked, alarms, asks the peer to force-close and never publishes its commitment', () => {
    const s = step(ready(7n, 7n, { round: { initiator: 'local' } }), reestablish(12n, 12n), env);
    expect(s.ch.state).toBe('CHANNEL_READY');
    expect(s.ch.flags).toEqual(['LOCAL_STATE_OUTDATED']);
    expect(s.ch.round).toBeNull();
    expect(s.ch.failureDetail).toContain("ours (7, 7), the peer's (12, 12)");
    expect(s.effects.some((e) => e.type === 'alarm')).toBe(true);
    expect(broadcasts(s.effects)).toEqual([]);
    const [req] = sent(s.effects);
    expect(req?.type).toBe('TxAbort');
    const text = new TextDecoder().decode((req as { value: { message: Uint8Array } }).value.message);
    expect(text.startsWith(FORCE_CLOSE_REQUEST)).toBe(true);

    const ch = s.ch;
    for (const force of [true, false])
      expect(() => step(ch, { type: 'shutdown', cmd: { force } }, env)).toThrow(/outdated/);
    expect(() => step(ch, { type: 'signCommitment' }, env)).toThrow(ChannelError);
    expect(() =>
      step(
        ch,
        {
          type: 'addTlc',
          cmd: {
            amount: 1n,
            paymentHash: new Uint8Array(32),
            expiry: 0n,
            hashAlgorithm: 0,
            onion: new Uint8Array(0),
          },
        },
        env,
      ),
    ).toThrow(/outdated/);
    // A reconnection asks again; anything else of the peer's changes nothing.
    const again = step(ch, reestablish(12n, 12n), env);
    expect(again.ch).toBe(ch);
    expect(sent(again.effects).map((m) => m.type)).toEqual(['TxAbort']);
    const signed = step(
      ch,
      {
        type: 'peer',
        msg: {
          type: 'CommitmentSigned',
          value: {
            channelId: ccc.bytesFrom(ID),
            fundingTxPartialSignature: new Uint8Array(32),
            nextCommitmentNonce: new Uint8Array(66),
          },
        },
      },
      env,
    );
    expect(signed).toEqual({ ch, effects: [] });
    // A force-close request of the peer's (both restored from old backups) is not honoured.
    expect(broadcasts(step(ch, abort(`${FORCE_CLOSE_REQUEST}x`), env).effects)).toEqual([]);
  });

  it("settles through the peer's commitment, still marked", () => {
    const marked = step(ready(7n, 7n), reestablish(9n, 9n), env).ch;
    const closed = step(marked, { type: 'remoteCommitment', txHash: `0x${'33'.repeat(32)}` }, env);
    expect(closed.ch.state).toBe('CLOSED');
    expect(closed.ch.flags).toEqual([
      'UNCOOPERATIVE_REMOTE',
      'WAITING_ONCHAIN_SETTLEMENT',
      'LOCAL_STATE_OUTDATED',
    ]);
    expect(closed.effects).toEqual([{ type: 'settleAfterDelay' }]);
    const settled = step(closed.ch, { type: 'settled', txHash: `0x${'33'.repeat(32)}` }, env);
    expect(settled.ch.flags).toEqual(['UNCOOPERATIVE_REMOTE', 'LOCAL_STATE_OUTDATED']);
  });

  it('resumes without a mark when the gap is one the replay closes', () => {
    const s = step(ready(7n, 7n, { round: { initiator: 'local' } }), reestablish(7n, 8n), env);
    expect(s.ch.flags).toEqual([]);
    expect(broadcasts(s.effects)).toEqual([]);
    expect(sent(s.effects).some((m) => m.type === 'TxAbort')).toBe(false);
  });
});

describe('a peer whose state is outdated', () => {
  it('gets the channel closed with our latest commitment', () => {
    const s = step(ready(12n, 12n), reestablish(7n, 7n), env);
    expect(s.ch.state).toBe('SHUTTING_DOWN');
    expect(s.ch.flags).toEqual(['WAITING_COMMITMENT_CONFIRMATION']);
    expect(s.ch.failureDetail).toContain("the peer's channel state is outdated");
    const [b] = broadcasts(s.effects) as Extract<Effect, { type: 'broadcast' }>[];
    expect(b?.tx.hash()).toBe(COMMITMENT.hash());
  });

  it("honours a peer's force-close request, and no other TxAbort", () => {
    const s = step(ready(7n, 7n), abort(`${FORCE_CLOSE_REQUEST}numbers`), env);
    expect(s.ch.state).toBe('SHUTTING_DOWN');
    expect(broadcasts(s.effects)).toHaveLength(1);
    const other = step(ready(7n, 7n), abort('some funding problem'), env);
    expect(other.ch.state).toBe('CHANNEL_READY');
    expect(other.effects).toEqual([]);
  });
});

describe('a channel restored from a backup', () => {
  const restored = () => ready(7n, 7n, { flags: ['RESTORED_FROM_BACKUP'] });

  it('refuses to close or sign, and ignores the peer, until a reestablish confirms it current', () => {
    for (const force of [true, false])
      expect(() => step(restored(), { type: 'shutdown', cmd: { force } }, env)).toThrow(
        /restored from a backup/,
      );
    expect(() => step(restored(), { type: 'signCommitment' }, env)).toThrow(/restored from a backup/);
    const shutdown = {
      type: 'peer',
      msg: {
        type: 'Shutdown',
        value: {
          channelId: ccc.bytesFrom(ID),
          feeRate: 1000n,
          closeScript: ccc.Script.from({ codeHash: `0x${'44'.repeat(32)}`, hashType: 'type', args: '0x' }),
        },
      },
    } as const;
    expect(step(restored(), shutdown, env)).toEqual({ ch: restored(), effects: [] });
    const s = step(restored(), reestablish(7n, 7n), env);
    expect(s.ch.flags).toEqual([]);
    expect(step(s.ch, { type: 'shutdown', cmd: { force: true } }, env).ch.state).toBe('SHUTTING_DOWN');
  });

  it('does not publish its commitment on low numbers or a request: the peer may be lying', () => {
    const low = step(restored(), reestablish(2n, 2n), env);
    expect(broadcasts(low.effects)).toEqual([]);
    expect(low.ch.state).toBe('CHANNEL_READY');
    expect(low.ch.flags).toEqual(['RESTORED_FROM_BACKUP']);
    expect(low.ch.failureDetail).toContain('not force-closing');
    expect(broadcasts(step(restored(), abort(FORCE_CLOSE_REQUEST), env).effects)).toEqual([]);
  });

  it('turns outdated when the peer is ahead', () => {
    const s = step(restored(), reestablish(9n, 9n), env);
    expect(s.ch.flags).toEqual(['LOCAL_STATE_OUTDATED']);
  });
});

describe('checkpointBackupStore', () => {
  it("marks the copy's ready channels and lists their numbers", () => {
    const db = openDatabase(':memory:', [channelSchema]);
    const store = new ChannelStore(db);
    store.save({ ...ready(5n, 6n), localBalance: 10n, remoteBalance: 20n });
    store.save({
      ...ready(1n, 1n),
      id: `0x${'cd'.repeat(32)}`,
      tempId: `0x${'cd'.repeat(32)}`,
      state: 'CLOSED',
    });
    const list = checkpointBackupStore(db);
    expect(list).toEqual([
      expect.objectContaining({
        channel_id: ID,
        state: 'CHANNEL_READY',
        local_commitment_number: '5',
        remote_commitment_number: '6',
        local_balance: '10',
        remote_balance: '20',
      }),
    ]);
    expect(store.get(ID)?.flags).toEqual(['RESTORED_FROM_BACKUP']);
    db.close();
  });
});
