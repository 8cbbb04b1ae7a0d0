/** The exit codes `tollgate` promises to scripts (README, "The tollgate CLI"). */
export const EXIT = {
  ok: 0,
  /** The gateway refused the request, a file was invalid, or the operation failed. */
  failed: 1,
  /** The command line itself was wrong: unknown command or option, missing or malformed argument. */
  usage: 2,
  /** No gateway answered at --url (connection refused, DNS, timeout). */
  unreachable: 3,
  /** The admin key is missing or was refused (401/403). */
  refused: 4,
} as const;

/**
 * A failure the CLI reports as one line on stderr (none when the message is empty) before it exits with
 * `exitCode`; never a stack trace.
 */
export class CliError extends Error {
  override name = 'CliError';
  readonly exitCode: number;
  /** The gateway's HTTP status when the failure is its answer. */
  readonly status: number | undefined;

  constructor(
    message: string,
    exitCode: number = EXIT.failed,
    options?: { cause?: unknown; status?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.exitCode = exitCode;
    this.status = options?.status;
  }
}
