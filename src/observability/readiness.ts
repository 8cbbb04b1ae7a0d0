/**
 * Readiness, apart from liveness: whether this instance can serve a request at full speed now. A list of named
 * conditions, each a synchronous check (the answer must cost nothing: load balancers ask often); any part of
 * the process adds its own with one `require` call. `/health/ready` answers 503 naming the unmet ones.
 */
export class Readiness {
  readonly #checks: { name: string; met: () => boolean | string }[] = [];

  /**
   * Adds a condition: the instance is not ready while `met` answers false, or a string that says why (shown
   * beside the condition's name).
   */
  require(name: string, met: () => boolean | string): void {
    this.#checks.push({ name, met });
  }

  /** The names of the conditions not met now, in the order they were added; empty when ready. */
  unmet(): string[] {
    const unmet: string[] = [];
    for (const check of this.#checks) {
      let met: boolean | string;
      try {
        met = check.met();
      } catch {
        met = false;
      }
      if (typeof met === 'string') unmet.push(`${check.name} (${met})`);
      else if (!met) unmet.push(check.name);
    }
    return unmet;
  }
}
