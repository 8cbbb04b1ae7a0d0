import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Built by `npm install` (the root package's `prepare` script) into web/dist, which the gateway serves:
// hashed names under /assets (cached for a year), index.html revalidated on every load.
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // No inline script anywhere: the Content-Security-Policy allows scripts from this site only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 700,
  },
});
