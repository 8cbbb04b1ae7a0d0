/**
 * A plain runner for the deployment checks: each check prints one line (ok / FAIL); a failed check whose
 * successors need it makes them fail too (as "not run"), since a skip never counts as a pass. Closes with
 * `N passed, M failed`.
 */
export class Checks {
  #passed = 0;
  #failed = 0;
  #blocked: string | undefined;
  readonly facts: string[] = [];

  /** Runs a check unless an earlier needed one failed; `needed` makes the rest of the section depend on it. */
  async check(name: string, body: () => Promise<void>, options: { needed?: boolean } = {}): Promise<boolean> {
    if (this.#blocked !== undefined) {
      this.#failed++;
      process.stdout.write(`FAIL ${name}: not run (${this.#blocked} failed)\n`);
      return false;
    }
    const started = performance.now();
    try {
      await body();
      this.#passed++;
      process.stdout.write(`ok   ${name} (${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
      return true;
    } catch (error) {
      this.#failed++;
      const message = error instanceof Error ? error.message : String(error);
      process.stdout.write(`FAIL ${name}: ${message}\n`);
      if (options.needed) this.#blocked = name;
      return false;
    }
  }

  /** A new section: checks after this no longer depend on the last section's. */
  section(title: string): void {
    this.#blocked = undefined;
    process.stdout.write(`\n# ${title}\n`);
  }

  /** A measured figure, printed at once and again at the end. */
  fact(line: string): void {
    this.facts.push(line);
    process.stdout.write(`     ${line}\n`);
  }

  get failed(): number {
    return this.#failed;
  }

  close(): void {
    if (this.facts.length > 0)
      process.stdout.write(`\n${this.facts.map((line) => `- ${line}`).join('\n')}\n`);
    process.stdout.write(`\n${this.#passed} passed, ${this.#failed} failed\n`);
  }
}
