using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace CosmosInterop;

/// <summary>
/// The <c>estimator</c> command: the .NET change feed estimator's figures for a processor's leases
/// (argv JSON <c>{database, monitored, leases, processorName}</c>). Prints one
/// <c>{"ev":"lease","lease","lag","owner"}</c> per lease from <c>GetChangeFeedEstimator(…).GetCurrentStateIterator()</c>
/// (ChangeFeedEstimatorIterator: session-token LSN − first pending <c>_lsn</c> + 1 per lease), then
/// <c>{"ev":"total","lag"}</c> from the push-model estimator (<c>GetChangeFeedEstimatorBuilder</c>: the SDK's own
/// sum over the leases, its first report), and <c>{"ev":"sum","lag"}</c>, the per-lease figures added up.
/// </summary>
internal static class Estimator
{
    public static async Task<int> Run(JObject config)
    {
        using CosmosClient client = Clients.Create(config.ToObject<ClientConfig>()!);
        string database = (string)config["database"]!;
        Container monitored = client.GetContainer(database, (string)config["monitored"]!);
        Container leases = client.GetContainer(database, (string)config["leases"]!);
        string processorName = (string)config["processorName"]!;

        ChangeFeedEstimator estimator = monitored.GetChangeFeedEstimator(processorName, leases);
        long sum = 0;
        using (FeedIterator<ChangeFeedProcessorState> states = estimator.GetCurrentStateIterator())
        {
            while (states.HasMoreResults)
            {
                foreach (ChangeFeedProcessorState state in await states.ReadNextAsync())
                {
                    sum += state.EstimatedLag;
                    Output.Line(new { ev = "lease", lease = state.LeaseToken, lag = state.EstimatedLag, owner = state.InstanceName });
                }
            }
        }

        var first = new TaskCompletionSource<long>(TaskCreationOptions.RunContinuationsAsynchronously);
        ChangeFeedProcessor push = monitored
            .GetChangeFeedEstimatorBuilder(processorName, (long estimation, CancellationToken _) =>
            {
                first.TrySetResult(estimation);
                return Task.CompletedTask;
            }, TimeSpan.FromMilliseconds(100))
            .WithLeaseContainer(leases)
            .Build();
        await push.StartAsync();
        long total = await first.Task.WaitAsync(TimeSpan.FromMinutes(2));
        await push.StopAsync();
        Output.Line(new { ev = "total", lag = total });
        Output.Line(new { ev = "sum", lag = sum });
        return 0;
    }
}
