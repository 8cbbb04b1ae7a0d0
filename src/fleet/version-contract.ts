import type { FleetLease } from '../store/fleet-repo.ts';
import { compareReleases, PRE_CONTRACT_RELEASE } from './release.ts';

/** What this instance says of itself in its lease. */
export interface Self {
  instanceId: string;
  release: string;
  oldestPeer: string;
}

/** What the live leases (and the writers seen without one) mean for this instance. */
export interface FleetVerdict {
  /** Why this instance must not become ready (an older instance it cannot run beside is alive); empty: none. */
  blockers: string[];
  /** Why this instance must drain and stop (a newer instance or the schema needs a newer release); or none. */
  mustStop: string | undefined;
  /** Instances of a release from before the contract (no release in their lease, or no lease at all). */
  preContract: string[];
  /** Whether every other live instance reads (and enforces) the named stored format or rule. */
  readByAll: (name: string) => boolean;
}

/**
 * Judges the fleet: `peers` are the other live leases, `unleased` the live writers seen without a lease (holds
 * in Redis of an instance from before the contract), `schemaOldest` the oldest release the schema allows.
 */
export function judgeFleet(
  self: Self,
  peers: readonly FleetLease[],
  unleased: readonly string[],
  schemaOldest: string | undefined,
): FleetVerdict {
  const blockers: string[] = [];
  const preContract = [...unleased];
  let mustStop: string | undefined;
  if (schemaOldest !== undefined && compareReleases(self.release, schemaOldest) < 0)
    mustStop = `the database schema needs release ${schemaOldest} or newer; this is ${self.release}`;
  for (const peer of peers) {
    if (peer.instanceId === self.instanceId) continue;
    if (peer.release === null) preContract.push(peer.instanceId);
    const release = peer.release ?? PRE_CONTRACT_RELEASE;
    if (compareReleases(release, self.oldestPeer) < 0)
      blockers.push(
        `instance ${peer.instanceId} runs release ${release}, older than ${self.oldestPeer}, the oldest this release runs beside`,
      );
    if (peer.oldestPeer !== null && compareReleases(self.release, peer.oldestPeer) < 0)
      mustStop ??= `instance ${peer.instanceId} runs release ${release}, which cannot run beside ${self.release} (it needs ${peer.oldestPeer} or newer)`;
  }
  for (const id of unleased)
    if (compareReleases(PRE_CONTRACT_RELEASE, self.oldestPeer) < 0)
      blockers.push(
        `instance ${id} runs a release from before the version contract, older than ${self.oldestPeer}`,
      );
  return { blockers, mustStop, preContract, readByAll: readByAll(self, peers, preContract.length > 0) };
}

/** Whether every other live instance reads a name; a writer from before the contract reads none of them. */
function readByAll(
  self: Self,
  peers: readonly FleetLease[],
  anyPreContract: boolean,
): (name: string) => boolean {
  const others = peers.filter((peer) => peer.instanceId !== self.instanceId);
  return (name) => !anyPreContract && others.every((peer) => peer.reads.includes(name));
}
