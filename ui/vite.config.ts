import { defineConfig } from "vitest/config";

// The app loads ui/dist through Tauri's custom protocol; keep asset paths relative and the
// build free of inline scripts (the CSP allows only 'self').
export default defineConfig({
  base: "./",
  clearScreen: false,
  // The preview page (tests/preview) reads the real captures in ../bench/results.
  server: { port: 5173, strictPort: true, fs: { allow: [".."] } },
  build: {
    target: "safari15",
    outDir: "dist",
    emptyOutDir: true,
    modulePreload: { polyfill: false },
  },
  test: {
    environment: "jsdom",
    include: ["tests/**/*.test.ts"],
  },
});
