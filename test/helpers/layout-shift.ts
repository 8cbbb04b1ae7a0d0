// Layout shift as the browser measures it, for the suites that check that pages hold still while loading.
import type { Page } from 'playwright-core';

/** The cumulative layout shift a page may reach while it loads (the "good" threshold of the web vitals). */
export const LAYOUT_SHIFT_LIMIT = 0.1;

/** The desktop and phone viewports every page is checked at. */
export const LAYOUT_WIDTHS = [
  { width: 1280, height: 900 },
  { width: 360, height: 780 },
] as const;

/** Sums the page's layout shifts not caused by input, from before its first script runs (an init script). */
export function watchLayoutShift(): void {
  const scope = globalThis as unknown as { __shift: number };
  scope.__shift = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries() as unknown as { value: number; hadRecentInput: boolean }[])
      if (!entry.hadRecentInput) scope.__shift += entry.value;
  });
  // Node's types know only Node's entry types; this runs in the page, whose observer has 'layout-shift'.
  const layoutShift = 'layout-shift' as unknown as 'mark';
  observer.observe({ type: layoutShift, buffered: true });
}

/** The cumulative shift the page has had since it was loaded (needs `watchLayoutShift` as an init script). */
export const layoutShift = (page: Page): Promise<number> =>
  page.evaluate(() => (globalThis as unknown as { __shift: number }).__shift);
