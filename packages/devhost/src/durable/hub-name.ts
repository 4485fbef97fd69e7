import { DevHostError } from "../errors.js";

/**
 * The task hub name rule of the Durable extension's default storage provider, Azure Storage
 * (AzureStorageOptions.ValidateHubName in azure-functions-durable-extension): the name must be a valid Azure table
 * name (a letter, then letters and digits, 3 characters at least), blob container and queue name (lower-cased; the
 * table rule already satisfies them), and at most 50 characters. The extension refuses any other name at start with
 * the message below — which says 45, its documented bound, although it lets 46 to 50 through.
 */
const TABLE_NAME = /^[A-Za-z][A-Za-z0-9]{2,}$/;
const MAX_LENGTH = 50;
const MIN_DOCUMENTED = 3;
const MAX_DOCUMENTED = 45;

/** The extension's ArgumentException text for a name it refuses, or undefined for one it accepts. */
export function taskHubNameError(hubName: string): string | undefined {
  if (TABLE_NAME.test(hubName) && hubName.length <= MAX_LENGTH) return undefined;
  return `Task hub name '${hubName}' should contain only alphanumeric characters, start with a letter, and have length between ${MIN_DOCUMENTED} and ${MAX_DOCUMENTED}.`;
}

/**
 * Refuses a task hub name the extension refuses, in its words (it fails to start, and so does the host). Only for
 * Azure Storage (host.json names no storageProvider, or `AzureStorage`): the other providers have rules of their own.
 */
export function checkTaskHubName(hubName: string, storageProvider: string | undefined): void {
  if (storageProvider !== undefined && storageProvider.toLowerCase() !== "azurestorage") return;
  const error = taskHubNameError(hubName);
  if (error) {
    throw new DevHostError(`host.json extensions.durableTask.hubName: ${error}`, { code: "AppLoad" });
  }
}
