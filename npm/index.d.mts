// Types of the ES module entry (index.mjs): the names of the CommonJS entry's types (index.d.ts),
// and the whole module as the default export.
export * from "./index.js";
import * as codexWire from "./index.js";
export default codexWire;
