#!/usr/bin/env node
// The `reward-mesh` binary: registers tsx (the repository runs TypeScript directly) and hands over.
import { register } from "tsx/esm/api";

register();
await import("../src/main.ts");
