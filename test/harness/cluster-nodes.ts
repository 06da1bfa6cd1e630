/**
 * The reply of `CLUSTER NODES`, parsed: one node's view of the whole cluster.
 * https://redis.io/commands/cluster-nodes/
 */

/** Slots are 0…16383. */
export const SLOTS = 16_384;

/** One line of `CLUSTER NODES`. */
export interface NodeLine {
  readonly id: string;
  readonly port: number;
  /** `master` or `replica` (Redis says `slave`). */
  readonly role: 'master' | 'replica';
  /** The id of the master this node replicates, for a replica. */
  readonly masterId: string | undefined;
  /** The node this view comes from. */
  readonly myself: boolean;
  /** Deemed failing (`fail` or `fail?`) by the node whose view this is. */
  readonly failing: boolean;
  /** Its config epoch (a replica shows its master's): who wins a slot two masters claim. */
  readonly configEpoch: number;
  /** Inclusive ranges of slots it serves; open migrations (`[slot->-id]`) are not included. */
  readonly slots: readonly (readonly [number, number])[];
  /** Slots this node is migrating away (`[slot->-id]`) or importing (`[slot-<-id]`): myself only. */
  readonly open: readonly string[];
}

/** Parses a `CLUSTER NODES` reply. */
export function parseClusterNodes(text: string): NodeLine[] {
  return text.split('\n').filter((line) => line.trim() !== '').map((line) => {
    const [id = '', address = '', flagList = '', master = '-', , , epoch = '0', , ...slotFields] = line.trim().split(' ');
    const flags = flagList.split(',');
    // ip:port@cport[,hostname]
    const port = Number(/:(\d+)@/.exec(address)?.[1] ?? NaN);
    const slots: [number, number][] = [];
    const open: string[] = [];
    for (const field of slotFields) {
      if (field.startsWith('[')) {
        open.push(field);
        continue;
      }
      const [from, to = from] = field.split('-');
      slots.push([Number(from), Number(to)]);
    }
    return {
      id,
      port,
      role: flags.includes('master') ? 'master' : 'replica',
      masterId: master === '-' ? undefined : master,
      myself: flags.includes('myself'),
      failing: flags.includes('fail') || flags.includes('fail?'),
      configEpoch: Number(epoch),
      slots,
      open,
    };
  });
}

/** The master serving `slot` in this view, if any. */
export function ownerOf(view: readonly NodeLine[], slot: number): NodeLine | undefined {
  return view.find((node) => node.role === 'master' && node.slots.some(([from, to]) => slot >= from && slot <= to));
}

/**
 * Who serves which slots in this view, as a comparable string (`id:from-to,…` per master, sorted),
 * and how many slots are covered.
 */
export function slotMap(view: readonly NodeLine[]): { readonly text: string; readonly covered: number } {
  let covered = 0;
  const owners: string[] = [];
  for (const node of view) {
    if (node.role !== 'master' || node.slots.length === 0) continue;
    const ranges = [...node.slots].sort((a, b) => a[0] - b[0]);
    for (const [from, to] of ranges) covered += to - from + 1;
    owners.push(`${node.id}:${ranges.map(([from, to]) => `${from}-${to}`).join(',')}`);
  }
  return { text: owners.sort().join(' '), covered };
}
