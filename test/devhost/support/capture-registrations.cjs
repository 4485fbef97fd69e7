// Child process for the contract test: records what @azure/functions hands the worker, independently of the
// dev host. It plants a plain stub module in the CommonJS cache under the name "@azure/functions-core" (the
// technique of functions-and-azd.md §1.4), imports the given entry files, and prints the registrations as JSON.
const Module = require("node:module");
const { pathToFileURL } = require("node:url");

const registrations = [];
const stub = new Module("@azure/functions-core");
stub.exports = {
  version: "contract-stub",
  hostVersion: "contract-stub",
  registerFunction(metadata) {
    registrations.push(metadata);
    return { dispose() {} };
  },
  registerHook() {
    return { dispose() {} };
  },
  setProgrammingModel() {},
  getProgrammingModel() {},
  log() {},
};
stub.loaded = true;
Module._cache["@azure/functions-core"] = stub;
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return request === "@azure/functions-core" ? request : resolve.call(this, request, ...rest);
};

(async () => {
  for (const file of process.argv.slice(2)) await import(pathToFileURL(file).href);
  process.stdout.write(JSON.stringify(registrations));
})().catch((e) => {
  process.stderr.write(String(e?.stack ?? e));
  process.exit(1);
});
