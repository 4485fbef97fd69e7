using System.Net;
using System.Net.Sockets;
using Microsoft.Azure.Cosmos;

namespace CosmosInterop;

/// <summary>How the harness reaches the emulator (argv JSON, shared by every command).</summary>
internal sealed class ClientConfig
{
    /// <summary>The account endpoint the client is configured with (what lease ids are derived from).</summary>
    public string Endpoint { get; set; } = "";
    public string Key { get; set; } = "";
    /// <summary>
    /// When set ("127.0.0.1:port"), every connection goes there whatever host the endpoint names: an
    /// Azure-shaped endpoint (https://myaccount.documents.azure.com:port/) then reaches the emulator, as a
    /// DNS entry would, while the SDK still sees the account host it was configured with.
    /// </summary>
    public string? ConnectTo { get; set; }
    /// <summary>Session (the emulator's default account level) unless told otherwise.</summary>
    public string? Consistency { get; set; }
    public bool Bulk { get; set; }
    /// <summary>429 retries the SDK makes by itself (its default is 9).</summary>
    public int? MaxRetryOn429 { get; set; }
}

internal static class Clients
{
    /// <summary>
    /// A CosmosClient in Gateway mode that talks only to the configured endpoint (the emulator has one region)
    /// and accepts the emulator's throw-away self-signed certificate.
    /// </summary>
    public static CosmosClient Create(ClientConfig config)
    {
        var handler = new SocketsHttpHandler
        {
            // The emulator's certificate is a throw-away self-signed one made by the test.
            SslOptions = { RemoteCertificateValidationCallback = (_, _, _, _) => true },
            PooledConnectionLifetime = TimeSpan.FromMinutes(5),
        };
        if (config.ConnectTo is { } target)
        {
            string[] parts = target.Split(':');
            var address = IPAddress.Parse(parts[0]);
            int port = int.Parse(parts[1]);
            handler.ConnectCallback = async (_, cancellationToken) =>
            {
                var socket = new Socket(SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
                try
                {
                    await socket.ConnectAsync(new IPEndPoint(address, port), cancellationToken);
                    return new NetworkStream(socket, ownsSocket: true);
                }
                catch
                {
                    socket.Dispose();
                    throw;
                }
            };
        }
        var options = new CosmosClientOptions
        {
            ConnectionMode = ConnectionMode.Gateway,
            LimitToEndpoint = true,
            HttpClientFactory = () => new HttpClient(handler, disposeHandler: false),
            AllowBulkExecution = config.Bulk,
        };
        if (config.Consistency is { } level) options.ConsistencyLevel = Enum.Parse<ConsistencyLevel>(level);
        if (config.MaxRetryOn429 is { } retries) options.MaxRetryAttemptsOnRateLimitedRequests = retries;
        return new CosmosClient(config.Endpoint, config.Key, options);
    }
}
