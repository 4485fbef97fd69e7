using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace CosmosInterop;

/// <summary>What the <c>processor</c> command runs (argv JSON); intervals in milliseconds, 0 = the SDK's default.</summary>
internal sealed class ProcessorConfig
{
    public string Database { get; set; } = "";
    public string Monitored { get; set; } = "";
    public string Leases { get; set; } = "";
    /// <summary>The trigger's <c>leaseContainerPrefix</c> (the processor name).</summary>
    public string ProcessorName { get; set; } = "";
    /// <summary>The trigger gives each host a new GUID; tests name hosts.</summary>
    public string InstanceName { get; set; } = "";
    /// <summary><c>latest</c> or <c>allVersionsAndDeletes</c>.</summary>
    public string Mode { get; set; } = "latest";
    public bool StartFromBeginning { get; set; }
    public int MaxItems { get; set; }
    public int FeedPollDelay { get; set; }
    public int LeaseAcquireInterval { get; set; }
    public int LeaseExpirationInterval { get; set; }
    public int LeaseRenewInterval { get; set; }
    /// <summary>How long each batch's handler takes (so a stop or kill lands while batches are in flight).</summary>
    public int HandlerDelayMs { get; set; }
    /// <summary>One <c>batch</c> line per handler call (its size) instead of a line per document (for the bench).</summary>
    public bool ReportBatches { get; set; }
}

/// <summary>
/// One .NET Change Feed Processor host, built as the Azure Functions Cosmos DB trigger builds it
/// (azure-webjobs-sdk-extensions CosmosDBTriggerListener.InitializeBuilder): the processor name is the lease prefix,
/// WithInstanceName, WithLeaseContainer, acquire/release/error notifications, WithMaxItems when set, WithStartTime(
/// DateTime.MinValue) for StartFromBeginning, WithPollInterval and WithLeaseConfiguration with the intervals that are set.
/// Prints <c>{"ev":"doc","host","lease","id","lsn"(,"op")}</c> per delivered change before the handler returns (so
/// before its checkpoint), and <c>acquired</c>/<c>released</c>/<c>error</c> events; "stop" on stdin stops it
/// gracefully (StopAsync releases its leases) and prints <c>stopped</c>. A kill is a crash.
/// </summary>
internal static class ProcessorHost
{
    public static async Task<int> Run(ClientConfig clientConfig, ProcessorConfig config)
    {
        using CosmosClient client = Clients.Create(clientConfig);
        Container monitored = client.GetContainer(config.Database, config.Monitored);
        Container leases = client.GetContainer(config.Database, config.Leases);
        string host = config.InstanceName;

        ChangeFeedProcessorBuilder builder = config.Mode switch
        {
            "latest" => monitored.GetChangeFeedProcessorBuilder<JObject>(config.ProcessorName,
                async (ChangeFeedProcessorContext context, IReadOnlyCollection<JObject> docs, CancellationToken _) =>
                {
                    if (config.ReportBatches) Output.Line(new { ev = "batch", host, lease = context.LeaseToken, count = docs.Count });
                    else foreach (JObject d in docs)
                        Output.Line(new { ev = "doc", host, lease = context.LeaseToken, id = (string?)d["id"], lsn = (long?)d["_lsn"] });
                    if (config.HandlerDelayMs > 0) await Task.Delay(config.HandlerDelayMs);
                }),
            "allVersionsAndDeletes" => monitored.GetChangeFeedProcessorBuilderWithAllVersionsAndDeletes<JObject>(config.ProcessorName,
                async (ChangeFeedProcessorContext context, IReadOnlyCollection<ChangeFeedItem<JObject>> changes, CancellationToken _) =>
                {
                    foreach (ChangeFeedItem<JObject> c in changes)
                    {
                        string? id = (string?)(c.Current ?? c.Previous)?["id"] ?? c.Metadata.Id;
                        Output.Line(new { ev = "doc", host, lease = context.LeaseToken, id, lsn = c.Metadata.Lsn, op = c.Metadata.OperationType.ToString() });
                    }
                    if (config.HandlerDelayMs > 0) await Task.Delay(config.HandlerDelayMs);
                }),
            _ => throw new ArgumentException($"mode '{config.Mode}' is neither 'latest' nor 'allVersionsAndDeletes'"),
        };
        builder = builder
            .WithErrorNotification((lease, e) =>
            {
                Output.Line(new { ev = "error", host, lease, error = Suite.CheckRunner.Describe(e) });
                return Task.CompletedTask;
            })
            .WithLeaseAcquireNotification(lease =>
            {
                Output.Line(new { ev = "acquired", host, lease });
                return Task.CompletedTask;
            })
            .WithLeaseReleaseNotification(lease =>
            {
                Output.Line(new { ev = "released", host, lease });
                return Task.CompletedTask;
            })
            .WithInstanceName(host)
            .WithLeaseContainer(leases);
        if (config.MaxItems > 0) builder = builder.WithMaxItems(config.MaxItems);
        // All versions and deletes cannot start from the beginning (the service refuses it).
        if (config.StartFromBeginning && config.Mode == "latest") builder = builder.WithStartTime(DateTime.MinValue.ToUniversalTime());
        if (config.FeedPollDelay > 0) builder = builder.WithPollInterval(TimeSpan.FromMilliseconds(config.FeedPollDelay));
        builder = builder.WithLeaseConfiguration(
            Ms(config.LeaseAcquireInterval), Ms(config.LeaseExpirationInterval), Ms(config.LeaseRenewInterval));

        ChangeFeedProcessor processor = builder.Build();
        await processor.StartAsync();
        Output.Line(new { ev = "started", host });

        // The parent's commands: "stop" (graceful). End of input: the parent went away, leave without releasing.
        while (await Console.In.ReadLineAsync() is { } line)
        {
            if (line.Trim() == "stop")
            {
                await processor.StopAsync();
                Output.Line(new { ev = "stopped", host });
                return 0;
            }
        }
        return 1;
    }

    private static TimeSpan? Ms(int ms) => ms > 0 ? TimeSpan.FromMilliseconds(ms) : null;
}
