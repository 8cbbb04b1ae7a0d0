/**
 * Watches a request's upstream attempts (tracing uses it): the router tells it each attempt as it starts and how it
 * ended. Absent when nothing watches, so an untraced request pays nothing for it.
 */
export interface AttemptObserver {
  /** `retry` counts from 0 (the first attempt). */
  attempt(deployment: string, provider: string, retry: number): AttemptWatch;
}

/** One upstream attempt being watched. */
export interface AttemptWatch {
  /** Headers the upstream request carries for this attempt (a `traceparent`). */
  readonly headers: Readonly<Record<string, string>>;
  /** The upstream answered (a whole answer, or a stream's first chunk). */
  succeeded(): void;
  /** The attempt failed: `kind` is the failure (a status code or connect, timeout …). */
  failed(kind: string): void;
}
