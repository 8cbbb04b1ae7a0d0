import { CHAT_BODY } from './load.ts';

/** The value of `--name=value` on the command line, if given. */
export const option = (name: string): string | undefined =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

/** Every value of `--name=value` on the command line, in order (an option given more than once). */
export const optionValues = (name: string): string[] =>
  process.argv.filter((a) => a.startsWith(`--${name}=`)).map((a) => a.slice(name.length + 3));

/**
 * The request the profiling scripts send: the harness's chat request, or with `--stream` a stream of `--chunks=N`
 * (20) chunks sent at once by the mock; `--model=` names another model (model-s: the simulator).
 */
export function profiledBody(): object {
  const model = option('model') ?? CHAT_BODY.model;
  return process.argv.includes('--stream')
    ? { ...CHAT_BODY, model, stream: true, mock_chunks: Number(option('chunks') ?? 20), mock_interval_ms: 0 }
    : { ...CHAT_BODY, model };
}
