using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace CosmosInterop.Suite;

/// <summary>
/// The <c>emulator-tests</c> command: the behaviours Microsoft's own emulator tests of the .NET SDK assert
/// (azure-cosmos-dotnet-v3, Microsoft.Azure.Cosmos.EmulatorTests: ChangeFeed/DynamicTests, SmokeTests, EstimatorTests,
/// CFP/AllVersionsAndDeletes/BuilderTests, FeedToken/ChangeFeedIteratorCoreTests, CosmosItemTests), checked here
/// with checks of our own, one per behaviour, against a fresh database named after <c>prefix</c>; exit 0 when all
/// passed. Each check makes its own containers so that one's writes never reach another's feed.
/// </summary>
internal static class EmulatorTests
{
    public static async Task<int> Run(JObject config)
    {
        var clientConfig = config.ToObject<ClientConfig>()!;
        string prefix = (string?)config["prefix"] ?? $"emu-{Guid.NewGuid():N}"[..12];
        using CosmosClient client = Clients.Create(clientConfig);
        Database db = await client.CreateDatabaseIfNotExistsAsync($"{prefix}-emu");
        var run = new CheckRunner();
        await ProcessorChecks.Run(run, client, db);
        await AllVersionsProcessorChecks.Run(run, db);
        await EstimatorChecks.Run(run, client, db);
        await FeedIteratorChecks.Run(run, db);
        await ItemEmulatorChecks.Run(run, client, db);
        await db.DeleteStreamAsync();
        Output.Line(new { ev = "summary", passed = run.Passed, failed = run.Failed });
        return run.Failed == 0 ? 0 : 1;
    }
}

/// <summary>What the change feed checks share: fresh containers, bounded waits, processors as Microsoft's tests build them.</summary>
internal static class Fixtures
{
    /// <summary>
    /// How long a check waits for something that must happen (a delivery, an acquisition): generous, so that a busy
    /// machine cannot fail a check, and bounded, so that a missing delivery fails it instead of hanging.
    /// </summary>
    public static readonly TimeSpan Patience = TimeSpan.FromSeconds(120);

    /// <summary>A monitored container (<c>/pk</c>, one range at the default throughput) with its own lease container (<c>/id</c>, as BaseChangeFeedClientHelper makes it).</summary>
    public static async Task<(Container Monitored, Container Leases)> Pair(Database db, Action<ContainerProperties>? configure = null)
    {
        string name = Guid.NewGuid().ToString("N")[..10];
        var properties = new ContainerProperties($"m-{name}", "/pk");
        configure?.Invoke(properties);
        Container monitored = await db.CreateContainerAsync(properties);
        Container leases = await db.CreateContainerAsync(new ContainerProperties($"l-{name}", "/id"));
        return (monitored, leases);
    }

    /// <summary>All versions and deletes needs a retention (and, as Microsoft's tests make it, TTL on with no default).</summary>
    public static void AllVersions(ContainerProperties p)
    {
        p.ChangeFeedPolicy.FullFidelityRetention = TimeSpan.FromMinutes(5);
        p.DefaultTimeToLive = -1;
    }

    /// <summary>
    /// The builder's common part: a named instance, the lease container, a short poll and acquire interval (the
    /// defaults, 5 s and 13 s, only make the checks slower; nothing here depends on them).
    /// </summary>
    public static ChangeFeedProcessorBuilder Common(this ChangeFeedProcessorBuilder b, Container leases) => b
        .WithInstanceName("random")
        .WithLeaseContainer(leases)
        .WithPollInterval(TimeSpan.FromMilliseconds(200))
        .WithLeaseConfiguration(acquireInterval: TimeSpan.FromSeconds(1));

    /// <summary>Waits for a signal within <see cref="Patience"/>; a timeout fails the check with what was awaited.</summary>
    public static async Task Within(Task signal, string what)
    {
        try
        {
            await signal.WaitAsync(Patience);
        }
        catch (TimeoutException)
        {
            throw new CheckFailed($"{what}: not within {Patience.TotalSeconds} s");
        }
    }

    /// <summary>Polls until the condition holds (every 200 ms, within <see cref="Patience"/>).</summary>
    public static async Task Until(Func<Task<bool>> condition, string what)
    {
        DateTime deadline = DateTime.UtcNow + Patience;
        while (!await condition())
        {
            if (DateTime.UtcNow > deadline) throw new CheckFailed($"{what}: not within {Patience.TotalSeconds} s");
            await Task.Delay(200);
        }
    }

    /// <summary>Every document of a container (the lease container's leases and store marks).</summary>
    public static async Task<List<JObject>> All(Container c)
    {
        var all = new List<JObject>();
        using FeedIterator<JObject> it = c.GetItemQueryIterator<JObject>("SELECT * FROM c");
        while (it.HasMoreResults) all.AddRange(await it.ReadNextAsync());
        return all;
    }

    /// <summary>Lease documents only: not the store's <c>.info</c> and <c>.lock</c> marks.</summary>
    public static bool IsLease(JObject d)
    {
        string id = (string)d["id"]!;
        return !id.Contains(".info") && !id.Contains(".lock");
    }

    /// <summary>What Microsoft's DynamicTests.ValidateContextAsync asserts of every batch's context.</summary>
    public static void ValidContext(ChangeFeedProcessorContext context)
    {
        Expect.True(context.LeaseToken is { Length: > 0 }, "context has a lease token");
        Expect.True(context.Headers?.Session is { Length: > 0 }, "context headers carry the session token");
        Expect.True(context.Headers!.RequestCharge > 0, "context headers carry a request charge");
        Expect.True(context.FeedRange is not null, "context names its feed range");
        Expect.True(context.Diagnostics.ToString().Contains("Change Feed Processor Read Next Async"), "context diagnostics");
    }
}
