/**
 * This release and the oldest release it can run beside on one database (and whose instances may run on the
 * schema it migrates). The one place both are stated: raise OLDEST_PEER_RELEASE when a release changes what it
 * stores or how it charges in a way an older one cannot follow (docs/operations.md, "Upgrades").
 */
export const RELEASE_VERSION = '0.2.0';
export const OLDEST_PEER_RELEASE = '0.1.0';

/**
 * Releases from before the version contract write leases without a release: they are taken to be the last of
 * them, which is the oldest this one runs beside. Anything older must be stopped before this one starts.
 */
export const PRE_CONTRACT_RELEASE = '0.1.0';

/** Compares `major.minor.patch` versions: negative, zero or positive as `a` is older, equal or newer. */
export function compareReleases(a: string, b: string): number {
  const pa = a.split(/[.-]/).map((part) => Number.parseInt(part, 10) || 0);
  const pb = b.split(/[.-]/).map((part) => Number.parseInt(part, 10) || 0);
  for (let i = 0; i < 3; i++) {
    const diff = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

/**
 * The rules this release enforces on every request, by name, listed in its lease. A new rule is switched on
 * only once every live instance lists it (FleetWatch.readByAll): until then no instance enforces it, so a
 * request never meets it on one instance and not on another.
 */
export const ENFORCED_RULES: readonly string[] = ['rule:key-controls', 'rule:operator-roles'];
