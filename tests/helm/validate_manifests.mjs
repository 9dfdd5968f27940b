// Validates every object of the given multi-document YAML files against its Kubernetes model
// (kubernetes-models for the built-in kinds, @kubernetes-models/prometheus-operator for
// ServiceMonitor, PodMonitor and PrometheusRule): types, required fields, enums and formats.
// Prints one line per object; exits 1 when any object fails or has no model.
//
//   node tests/helm/validate_manifests.mjs rendered.yaml ...
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

function modelModule(apiVersion) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "monitoring.coreos.com") {
    return `@kubernetes-models/prometheus-operator/${group}/${version}`;
  }
  return group === "" ? `kubernetes-models/${version}` : `kubernetes-models/${group}/${version}`;
}

let checked = 0;
let failures = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (doc.errors.length > 0) {
      console.log(`FAIL ${file}: YAML: ${doc.errors[0].message}`);
      failures++;
      continue;
    }
    const object = doc.toJS();
    if (object === null || object === undefined) continue;
    checked++;
    const where = `${file}: ${object.kind}/${object.metadata?.name}`;
    let Model;
    try {
      Model = (await import(modelModule(object.apiVersion)))[object.kind];
    } catch (e) {
      Model = undefined;
    }
    if (Model === undefined) {
      console.log(`FAIL ${where}: no model for ${object.apiVersion} ${object.kind}`);
      failures++;
      continue;
    }
    try {
      new Model(object).validate();
      console.log(`ok   ${where}`);
    } catch (e) {
      console.log(`FAIL ${where}: ${e.message}`);
      failures++;
    }
  }
}
console.log(`${checked - failures} of ${checked} objects valid`);
process.exit(failures === 0 && checked > 0 ? 0 : 1);
