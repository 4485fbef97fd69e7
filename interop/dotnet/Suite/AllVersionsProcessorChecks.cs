using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace CosmosInterop.Suite;

/// <summary>
/// The all-versions-and-deletes processor as Microsoft's CFP/AllVersionsAndDeletes/BuilderTests.cs drives it: a cold
/// start that delivers, create/replace/delete with their metadata, a TTL expiry, and the lease mode that forbids
/// switching a processor's mode.
/// </summary>
internal static class AllVersionsProcessorChecks
{
    private sealed class Changes
    {
        private readonly object gate = new();
        public readonly List<ChangeFeedItem<JObject>> Items = [];
        public readonly List<string> Problems = [];
        public readonly TaskCompletionSource Acquired = new(TaskCreationOptions.RunContinuationsAsynchronously);
        public readonly TaskCompletionSource Delete = new(TaskCreationOptions.RunContinuationsAsynchronously);
        public readonly TaskCompletionSource Probe = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public void Add(ChangeFeedProcessorContext context, IEnumerable<ChangeFeedItem<JObject>> items)
        {
            lock (gate)
            {
                try { Fixtures.ValidContext(context); }
                catch (CheckFailed e) { Problems.Add(e.Message); }
                foreach (ChangeFeedItem<JObject> i in items)
                {
                    if ((string?)i.Current?["pk"] == ProbeKey)
                    {
                        Probe.TrySetResult();
                        continue;
                    }
                    Items.Add(i);
                    if (i.Metadata.OperationType == ChangeFeedOperationType.Delete) Delete.TrySetResult();
                }
            }
        }
    }

    private static ChangeFeedProcessor Processor(Container monitored, Container leases, Changes changes, List<string> errors) => monitored
        .GetChangeFeedProcessorBuilderWithAllVersionsAndDeletes<JObject>("processor", (context, items, _) =>
        {
            changes.Add(context, items);
            return Task.CompletedTask;
        })
        .Common(leases)
        .WithLeaseAcquireNotification(_ => { changes.Acquired.TrySetResult(); return Task.CompletedTask; })
        .WithErrorNotification((_, e) => { lock (errors) errors.Add(CheckRunner.Describe(e)); return Task.CompletedTask; })
        .Build();

    private static string? Text(JToken? t, string name) => (string?)t?[name];

    /// <summary>The partition key of the probes <see cref="Reading"/> writes (left out of what a check sees).</summary>
    private const string ProbeKey = "probe";

    /// <summary>
    /// Returns once the processor reads the feed. An AVAD lease without a continuation starts from "now" at its first
    /// read (the SDK sets no start time in this mode: azure-cosmos-dotnet-v3#5846), which comes after the acquire
    /// notification: a write between the two would be missed. So probes are written, one every 2 s, until one is
    /// delivered; only then does the check write what it asserts on.
    /// </summary>
    private static async Task Reading(Container monitored, Changes changes)
    {
        DateTime deadline = DateTime.UtcNow + Fixtures.Patience;
        for (int i = 0; ; i++)
        {
            Task seen = changes.Probe.Task;
            await monitored.CreateItemAsync(new JObject { ["id"] = $"probe{i}", ["pk"] = ProbeKey }, new PartitionKey(ProbeKey));
            if (await Task.WhenAny(seen, Task.Delay(2000)) == seen) return;
            if (DateTime.UtcNow > deadline) throw new CheckFailed($"no probe delivered within {Fixtures.Patience.TotalSeconds} s");
        }
    }

    /// <summary>
    /// A new all-versions monitored/lease pair and the processor on it, started, its lease acquired and its feed
    /// read (<see cref="Reading"/>).
    /// </summary>
    private static async Task<(Container Monitored, Changes Changes, List<string> Errors, ChangeFeedProcessor P)> ReadingOnNewPair(Database db)
    {
        var (monitored, leases) = await Fixtures.Pair(db, Fixtures.AllVersions);
        var changes = new Changes();
        var errors = new List<string>();
        ChangeFeedProcessor p = Processor(monitored, leases, changes, errors);
        await p.StartAsync();
        await Fixtures.Within(changes.Acquired.Task, "lease acquired");
        await Reading(monitored, changes);
        return (monitored, changes, errors, p);
    }

    public static async Task Run(CheckRunner run, Database db)
    {
        await run.Run("AVAD processor: cold start; create, replace, delete with lsn, previousImageLSN, crts, delete's id, key and previous image", async () =>
        {
            var (monitored, changes, errors, p) = await ReadingOnNewPair(db);
            await monitored.CreateItemAsync(new JObject { ["id"] = "1", ["pk"] = "1", ["description"] = "original test" }, new PartitionKey("1"));
            // crts has second granularity: a clear second between operations, as Microsoft's test waits.
            await Task.Delay(1100);
            await monitored.UpsertItemAsync(new JObject { ["id"] = "1", ["pk"] = "1", ["description"] = "test after replace" }, new PartitionKey("1"));
            await Task.Delay(1100);
            await monitored.DeleteItemAsync<JObject>("1", new PartitionKey("1"));
            await Fixtures.Within(changes.Delete.Task, "the delete delivered");
            await p.StopAsync();
            Expect.Sequence([], errors, "error notifications");
            Expect.Sequence([], changes.Problems, "context problems");
            List<ChangeFeedItem<JObject>> items = changes.Items;
            Expect.Sequence([ChangeFeedOperationType.Create, ChangeFeedOperationType.Replace, ChangeFeedOperationType.Delete],
                items.Select(i => i.Metadata.OperationType), "operations");
            var (create, replace, delete) = (items[0], items[1], items[2]);
            Expect.Equal("original test", Text(create.Current, "description"), "create's current");
            Expect.Equal("1", Text(create.Current, "pk"), "create's current pk");
            Expect.Equal(0L, create.Metadata.PreviousLsn, "create's previousImageLSN");
            Expect.True(create.Previous is null, "create has no previous");
            Expect.True(create.Metadata.Id is null && create.Metadata.PartitionKey is null, "create's metadata names no id or key");
            Expect.True(!create.Metadata.IsTimeToLiveExpired, "create is not a TTL expiry");
            Expect.Equal("test after replace", Text(replace.Current, "description"), "replace's current");
            Expect.Equal(create.Metadata.Lsn, replace.Metadata.PreviousLsn, "replace's previousImageLSN is the create's lsn");
            Expect.True(replace.Previous is null, "replace has no previous");
            Expect.True(Text(delete.Current, "id") is null, "delete's Current.id is null");
            Expect.Equal("1", delete.Metadata.Id, "delete's metadata id");
            Expect.Equal("1", delete.Metadata.PartitionKey?.Values.FirstOrDefault()?.ToString(), "delete's metadata partition key");
            Expect.Equal("test after replace", Text(delete.Previous, "description"), "delete's previous image");
            Expect.True(!delete.Metadata.IsTimeToLiveExpired, "a user delete is not a TTL expiry");
            Expect.True(create.Metadata.Lsn > 0 && create.Metadata.Lsn < replace.Metadata.Lsn && replace.Metadata.Lsn < delete.Metadata.Lsn, "lsn grows");
            Expect.True(create.Metadata.ConflictResolutionTimestamp < replace.Metadata.ConflictResolutionTimestamp
                && replace.Metadata.ConflictResolutionTimestamp < delete.Metadata.ConflictResolutionTimestamp, "crts grows");
        });

        await run.Run("AVAD processor: a TTL expiry is a delete with timeToLiveExpired, id and key, and no previous image", async () =>
        {
            var (monitored, changes, errors, p) = await ReadingOnNewPair(db);
            await monitored.CreateItemAsync(new JObject { ["id"] = "1", ["pk"] = "1", ["description"] = "Testing TTL on CFP.", ["ttl"] = 2 }, new PartitionKey("1"));
            await Fixtures.Within(changes.Delete.Task, "the expiry delivered");
            await p.StopAsync();
            Expect.Sequence([], errors, "error notifications");
            List<ChangeFeedItem<JObject>> items = changes.Items;
            Expect.Sequence([ChangeFeedOperationType.Create, ChangeFeedOperationType.Delete], items.Select(i => i.Metadata.OperationType), "operations");
            Expect.Equal(2, (int?)items[0].Current["ttl"], "create's current ttl");
            Expect.True(!items[0].Metadata.IsTimeToLiveExpired, "the create is not an expiry");
            ChangeFeedItem<JObject> expiry = items[1];
            Expect.True(expiry.Metadata.IsTimeToLiveExpired, "timeToLiveExpired");
            Expect.True(Text(expiry.Current, "id") is null, "the expiry's Current.id is null");
            Expect.Equal("1", expiry.Metadata.Id, "the expiry's metadata id");
            Expect.Equal("1", expiry.Metadata.PartitionKey?.Values.FirstOrDefault()?.ToString(), "the expiry's metadata partition key");
            Expect.True(expiry.Previous is null, "the expiry has no previous image");
            Expect.True(expiry.Metadata.Lsn > items[0].Metadata.Lsn, "lsn grows");
        });

        await run.Run("processor: leases remember their mode; switching latest version ↔ all versions and deletes is refused", async () =>
        {
            var (latest, latestLeases) = await Fixtures.Pair(db, Fixtures.AllVersions);
            var (avad, avadLeases) = await Fixtures.Pair(db, Fixtures.AllVersions);
            var noErrors = new List<string>();
            // Started until its lease is acquired, then stopped (the lease, and its Mode, stay).
            async Task StartStop(Func<Changes, ChangeFeedProcessor> build)
            {
                var c = new Changes();
                ChangeFeedProcessor p = build(c);
                await p.StartAsync();
                await Fixtures.Within(c.Acquired.Task, "lease acquired");
                await p.StopAsync();
            }
            ChangeFeedProcessor Latest(Container m, Container l, Changes c) => m
                .GetChangeFeedProcessorBuilder<JObject>("processor", (IReadOnlyCollection<JObject> _, CancellationToken _) => Task.CompletedTask)
                .Common(l)
                .WithLeaseAcquireNotification(_ => { c.Acquired.TrySetResult(); return Task.CompletedTask; })
                .Build();
            await StartStop(c => Latest(latest, latestLeases, c));
            await StartStop(c => Processor(avad, avadLeases, c, noErrors));
            // The same mode again is accepted, as Microsoft's WhenNoSwitch… tests expect.
            await StartStop(c => Latest(latest, latestLeases, c));
            await StartStop(c => Processor(avad, avadLeases, c, noErrors));
            Expect.Sequence([], noErrors, "error notifications");
            var toAvad = Processor(latest, latestLeases, new Changes(), noErrors);
            var toLatest = Latest(avad, avadLeases, new Changes());
            string Refusal(Exception? e) => e is ArgumentException a ? a.Message : $"no ArgumentException ({e?.GetType().Name})";
            Exception? e1 = null, e2 = null;
            try { await toAvad.StartAsync(); await toAvad.StopAsync(); } catch (Exception e) { e1 = e; }
            try { await toLatest.StartAsync(); await toLatest.StopAsync(); } catch (Exception e) { e2 = e; }
            Expect.Equal("Switching ChangeFeedMode Incremental Feed to Full-Fidelity Feed is not allowed.", Refusal(e1), "latest version → AVAD");
            Expect.Equal("Switching ChangeFeedMode Full-Fidelity Feed to Incremental Feed is not allowed.", Refusal(e2), "AVAD → latest version");
            foreach (JObject lease in (await Fixtures.All(latestLeases)).Where(Fixtures.IsLease))
                Expect.Equal("Incremental Feed", (string?)lease["Mode"], "latest-version lease's Mode");
            foreach (JObject lease in (await Fixtures.All(avadLeases)).Where(Fixtures.IsLease))
                Expect.Equal("Full-Fidelity Feed", (string?)lease["Mode"], "AVAD lease's Mode");
        });
    }
}
