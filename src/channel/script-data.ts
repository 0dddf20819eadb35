/** Conversions between ccc's scripts, cell deps and nonces and the plain data a channel stores. */
import { ccc } from '@ckb-ccc/core';
import { bytesToHex } from '../codec/index.ts';
import type { CellDepData, Nonce, ScriptData } from './state.ts';

const h = (x: Uint8Array) => bytesToHex(x);

export function scriptData(s: ccc.ScriptLike): ScriptData {
  const x = ccc.Script.from(s);
  return { codeHash: x.codeHash, hashType: x.hashType as ScriptData['hashType'], args: x.args };
}
export function cellDepData(d: ccc.CellDepLike): CellDepData {
  const x = ccc.CellDep.from(d);
  return {
    outPoint: { txHash: x.outPoint.txHash, index: String(x.outPoint.index) },
    depType: x.depType as CellDepData['depType'],
  };
}

export function toScript(s: ScriptData): ccc.Script {
  return ccc.Script.from(s);
}

export function nonceData(n: { secret: Uint8Array; public: Uint8Array }): Nonce {
  return { secret: h(n.secret), public: h(n.public) };
}
