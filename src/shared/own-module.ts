import { fileURLToPath } from 'node:url';

/**
 * The path of another module of this project, `relative` to the module at `base` (its import.meta.url) and
 * written with the `.ts` name of the source. Run from the built package (dist/, JavaScript), `.ts` becomes
 * `.js`: a path handed to a child process is not an import, so the compiler cannot rewrite it.
 */
export function ownModulePath(relative: string, base: string): string {
  const built = base.endsWith('.js');
  return fileURLToPath(new URL(built ? relative.replace(/\.ts$/, '.js') : relative, base));
}
