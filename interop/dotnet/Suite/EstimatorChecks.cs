using System.Net;
using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace CosmosInterop.Suite;

/// <summary>
/// The change feed estimator on one range, as Microsoft's ChangeFeed/EstimatorTests.cs asserts it: push (the builder's
/// delegate) and pull (GetCurrentStateIterator) with no leases, with leases never checkpointed (the sentinel 1 each)
/// and with documents written after the last checkpoint; a missing monitored container.
/// </summary>
internal static class EstimatorChecks
{
    /// <summary>The push estimator's first estimation.</summary>
    private static async Task<long> Pushed(Container monitored, Container leases)
    {
        var first = new TaskCompletionSource<long>(TaskCreationOptions.RunContinuationsAsynchronously);
        ChangeFeedProcessor estimator = monitored
            .GetChangeFeedEstimatorBuilder("test", (long estimation, CancellationToken _) =>
            {
                first.TrySetResult(estimation);
                return Task.CompletedTask;
            }, TimeSpan.FromSeconds(1))
            .WithLeaseContainer(leases)
            .Build();
        await estimator.StartAsync();
        try
        {
            await Fixtures.Within(first.Task, "an estimation");
            return first.Task.Result;
        }
        finally
        {
            await estimator.StopAsync();
        }
    }

    /// <summary>
    /// The pull estimator's states, every page. With <paramref name="charged"/> each page with states must carry a
    /// charge (it read the change feed: Microsoft's CountPendingDocuments_Pull asserts it; a never-checkpointed
    /// lease's sentinel reads nothing).
    /// </summary>
    private static async Task<List<ChangeFeedProcessorState>> Pulled(Container monitored, Container leases, bool charged = false)
    {
        ChangeFeedEstimator estimator = monitored.GetChangeFeedEstimator("test", leases);
        var states = new List<ChangeFeedProcessorState>();
        using FeedIterator<ChangeFeedProcessorState> it = estimator.GetCurrentStateIterator();
        while (it.HasMoreResults)
        {
            FeedResponse<ChangeFeedProcessorState> page = await it.ReadNextAsync();
            states.AddRange(page);
            if (charged) Expect.True(page.Count == 0 || page.Headers.RequestCharge > 0, "an estimator page carries a charge");
        }
        return states;
    }

    /// <summary>A processor that handles everything and is stopped once the lease is acquired and `then` is done.</summary>
    private static async Task WithProcessor(Container monitored, Container leases, Func<Task> then)
    {
        var acquired = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        ChangeFeedProcessor p = monitored
            .GetChangeFeedProcessorBuilder<JObject>("test", (IReadOnlyCollection<JObject> _, CancellationToken _) => Task.CompletedTask)
            .Common(leases)
            .WithLeaseAcquireNotification(_ => { acquired.TrySetResult(); return Task.CompletedTask; })
            .Build();
        await p.StartAsync();
        await Fixtures.Within(acquired.Task, "lease acquired");
        await then();
        await p.StopAsync();
    }

    private static async Task CreateUnkeyed(Container c, int from, int count)
    {
        for (int i = from; i < from + count; i++) await c.CreateItemAsync(new JObject { ["id"] = i.ToString() });
    }

    public static async Task Run(CheckRunner run, CosmosClient client, Database db)
    {
        await run.Run("estimator: with no leases the push estimator reports 1 and the pull estimator 0", async () =>
        {
            var (monitored, leases) = await Fixtures.Pair(db);
            Expect.Equal(1L, await Pushed(monitored, leases), "push");
            Expect.Equal(0L, (await Pulled(monitored, leases)).Sum(s => s.EstimatedLag), "pull");
        });

        await run.Run("estimator: a lease never checkpointed reports the sentinel lag 1 (push and pull)", async () =>
        {
            var (monitored, leases) = await Fixtures.Pair(db);
            await WithProcessor(monitored, leases, () => Task.CompletedTask);
            List<JObject> leaseDocs = (await Fixtures.All(leases)).Where(Fixtures.IsLease).ToList();
            Expect.Equal(1, leaseDocs.Count, "one lease (one range)");
            Expect.True(leaseDocs[0]["ContinuationToken"] is null or { Type: JTokenType.Null }, "the lease has no continuation");
            Expect.Equal(1L, await Pushed(monitored, leases), "push");
            List<ChangeFeedProcessorState> states = await Pulled(monitored, leases);
            Expect.Sequence([1L], states.Select(s => s.EstimatedLag), "pull: one state, lag 1");
            Expect.Equal((string?)leaseDocs[0]["LeaseToken"], states[0].LeaseToken, "the state's lease token");
        });

        await run.Run("estimator: documents written after the last checkpoint are the lag (push and pull)", async () =>
        {
            var (monitored, leases) = await Fixtures.Pair(db);
            await WithProcessor(monitored, leases, async () =>
            {
                await CreateUnkeyed(monitored, 0, 10);
                // Caught up = checkpointed after the 10th: the lease has a continuation and the estimator says 0.
                await Fixtures.Until(async () =>
                {
                    JObject lease = (await Fixtures.All(leases)).Single(Fixtures.IsLease);
                    return lease["ContinuationToken"] is { Type: JTokenType.String }
                        && (await Pulled(monitored, leases)).Sum(s => s.EstimatedLag) == 0;
                }, "the processor checkpointed all 10");
            });
            await CreateUnkeyed(monitored, 11, 10);
            Expect.Equal(10L, await Pushed(monitored, leases), "push");
            List<ChangeFeedProcessorState> states = await Pulled(monitored, leases, charged: true);
            Expect.Equal(10L, states.Sum(s => s.EstimatedLag), "pull");
            Expect.True(states.All(s => s.InstanceName is null), "a stopped processor's lease has no owner");
        });

        await run.Run("estimator: StartAsync on a missing monitored container is a 404", async () =>
        {
            var (_, leases) = await Fixtures.Pair(db);
            ChangeFeedProcessor estimator = client.GetContainer(db.Id, "DoesNotExist")
                .GetChangeFeedEstimatorBuilder("test", (long _, CancellationToken _) => Task.CompletedTask, TimeSpan.FromSeconds(1))
                .WithLeaseContainer(leases)
                .Build();
            await Expect.Status(HttpStatusCode.NotFound, () => estimator.StartAsync(), "StartAsync");
        });
    }
}
