using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
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
    /// <summary>
    /// How the emulator's certificate is judged: "any" (default: accepted unchecked, as the test's throw-away one),
    /// "system" (the default validation against the OS store — on Linux OpenSSL's, which SSL_CERT_FILE /
    /// SSL_CERT_DIR name), or "file" (chained to <see cref="CaFile"/> only, by a validation callback).
    /// </summary>
    public string? Trust { get; set; }
    /// <summary>With Trust "file": the PEM certificate trusted as the root (the emulator's emulator-cert.pem).</summary>
    public string? CaFile { get; set; }
}

internal static class Clients
{
    /// <summary>
    /// A CosmosClient in Gateway mode that talks only to the configured endpoint (the emulator has one region)
    /// and accepts the emulator's throw-away self-signed certificate.
    /// </summary>
    public static CosmosClient Create(ClientConfig config)
    {
        var handler = new SocketsHttpHandler { PooledConnectionLifetime = TimeSpan.FromMinutes(5) };
        switch (config.Trust ?? "any")
        {
            case "any":
                // The emulator's certificate is a throw-away self-signed one made by the test.
                handler.SslOptions.RemoteCertificateValidationCallback = (_, _, _, _) => true;
                break;
            case "system":
                break;
            case "file":
                handler.SslOptions.RemoteCertificateValidationCallback = TrustOnly(config.CaFile!);
                break;
            default:
                throw new ArgumentException($"Trust is any, system or file, not '{config.Trust}'");
        }
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

    /// <summary>
    /// A validation callback that trusts one root (the emulator's certificate file) and nothing else: the chain is
    /// rebuilt with that certificate as its custom trust store, and the host name must match (no other error
    /// than an untrusted root, which the custom store settles, is forgiven).
    /// </summary>
    private static RemoteCertificateValidationCallback TrustOnly(string caFile)
    {
        var root = X509Certificate2.CreateFromPem(File.ReadAllText(caFile));
        return (_, certificate, _, errors) =>
        {
            if (certificate is null || errors.HasFlag(SslPolicyErrors.RemoteCertificateNameMismatch)) return false;
            using var chain = new X509Chain();
            chain.ChainPolicy.TrustMode = X509ChainTrustMode.CustomRootTrust;
            chain.ChainPolicy.CustomTrustStore.Add(root);
            chain.ChainPolicy.RevocationMode = X509RevocationMode.NoCheck;
            return chain.Build(new X509Certificate2(certificate));
        };
    }
}
