// infra/bicep/main.parameters.json as azd reads it: each parameter's value is `${VARIABLE}` or
// `${VARIABLE=default}`, which azd replaces with the environment's value (or that default) before it deploys; the
// deployment then converts the string to the parameter's type.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { infra, type ParameterValue } from "./bicep.js";

export interface AzdParameter {
  name: string;
  variable: string;
  /** The `=default` part, when there is one. */
  fallback: string | undefined;
}

export interface TemplateParameter {
  type: string;
  defaultValue?: unknown;
  allowedValues?: unknown[];
  minLength?: number;
}

export function azdParameters(): AzdParameter[] {
  const file = JSON.parse(readFileSync(join(infra, "main.parameters.json"), "utf8")) as {
    parameters: Record<string, { value: unknown }>;
  };
  return Object.entries(file.parameters).map(([name, { value }]) => {
    const match = typeof value === "string" ? /^\$\{([A-Z_][A-Z0-9_]*)(?:=(.*))?\}$/.exec(value) : null;
    if (!match)
      throw new Error(`main.parameters.json: ${name} is not \${VARIABLE} or \${VARIABLE=default}: ${value}`);
    return { name, variable: match[1], fallback: match[2] };
  });
}

/** `text` as a value of an ARM parameter type, the conversion a deployment makes of azd's string; throws if none. */
export function typedValue(text: string, type: string): ParameterValue {
  switch (type.toLowerCase()) {
    case "int":
      if (!/^-?\d+$/.test(text)) throw new Error(`'${text}' is not an int`);
      return Number(text);
    case "bool":
      if (text !== "true" && text !== "false") throw new Error(`'${text}' is not a bool`);
      return text === "true";
    case "string":
      return text;
    default:
      throw new Error(`an azd variable cannot feed a parameter of type ${type}`);
  }
}

/** What azd sets itself, or asks for when unset (the parameters without a default in main.bicep). */
export const environment = {
  environmentName: "ci",
  location: "westeurope",
  // The API's app registration (AUTH_CLIENT_ID) and the deploying user (AZURE_PRINCIPAL_ID): made-up ids.
  authClientId: "5b1c4e20-0000-4000-8000-000000000003",
  principalId: "9d3a7f61-0000-4000-8000-000000000004",
} as const;

/**
 * The parameters a first `azd up` deploys with: every `=default` of main.parameters.json as its parameter's type,
 * plus `environment`; a variable left unset without a default is left out, so main.bicep's default applies.
 */
export function firstDeployment(template: Record<string, TemplateParameter>): Record<string, ParameterValue> {
  const values: Record<string, ParameterValue> = {};
  for (const p of azdParameters()) {
    const given = (environment as Record<string, string>)[p.name];
    const text = given ?? p.fallback;
    if (text !== undefined) values[p.name] = typedValue(text, template[p.name]?.type ?? "missing");
  }
  return values;
}
