import { num, type TokenKinds } from './api.ts';

/** What a row's prompt tokens hold beside plain input ("1,920 cached, 300 written"), or '' when nothing. */
export function promptKinds(row: TokenKinds): string {
  const parts: string[] = [];
  if (row.cached_input_tokens) parts.push(`${num(row.cached_input_tokens)} cached`);
  if (row.cache_write_tokens) parts.push(`${num(row.cache_write_tokens)} written`);
  return parts.join(', ');
}

/** What a row's completion tokens hold beside the answer ("64 reasoning"), or '' when nothing. */
export const reasoningOf = (row: TokenKinds): string =>
  row.reasoning_tokens ? `${num(row.reasoning_tokens)} reasoning` : '';

/** A token count, and under it what kinds it holds (cache reads and writes, reasoning) when there are any. */
export function Tokens({ count, detail }: { count: number; detail: string }) {
  return (
    <>
      {num(count)}
      {detail !== '' && (
        <>
          <br />
          <small className="token-kinds">{detail}</small>
        </>
      )}
    </>
  );
}
