/** Every domain's tables in the node's store, in the order they are migrated. */
import { cchSchema } from '../cch/index.ts';
import { channelSchema } from '../channel/index.ts';
import { graphSchema } from '../graph/index.ts';
import { invoiceSchema } from '../invoice/index.ts';
import { peerSchema } from '../p2p/index.ts';
import { paymentLinkSchema, paymentSchema } from '../payment/index.ts';
import { type DomainSchema, nodeMetaSchema } from '../store/index.ts';
import { watchtowerSchema } from '../watchtower/index.ts';

export const NODE_SCHEMAS: DomainSchema[] = [
  nodeMetaSchema,
  invoiceSchema,
  peerSchema,
  channelSchema,
  graphSchema,
  paymentSchema,
  paymentLinkSchema,
  watchtowerSchema,
  cchSchema,
];
